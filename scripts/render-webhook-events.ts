/** Writes docs/webhooks-events.md from the outbound event catalogue, formatted as biome formats it. */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { renderEventsMarkdown } from '../src/webhooks/event-docs.ts';
import { toolBin } from './tools.mjs';

const file = new URL('../docs/webhooks-events.md', import.meta.url);
writeFileSync(file, renderEventsMarkdown());
execFileSync(toolBin('biome'), ['format', '--write', file.pathname], { stdio: 'inherit' });
