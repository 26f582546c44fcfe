/**
 * src/generated/openapi.ts must be what the service's current /openapi.json generates: a route or
 * schema change without `npm run generate -w @partner-yield/sdk` fails here, so the SDK's types
 * cannot drift from the API.
 */
import { expect, it } from 'vitest';
import { committedTypes, renderTypes, serviceDocument } from '../scripts/openapi-types.ts';

it('the generated types match the document the service serves', async () => {
  const rendered = await renderTypes(await serviceDocument());
  // On a mismatch: npm run generate -w @partner-yield/sdk
  expect(committedTypes() === rendered, 'src/generated/openapi.ts is stale').toBe(true);
});
