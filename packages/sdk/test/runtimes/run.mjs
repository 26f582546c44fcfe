/**
 * The entry of the runtime suites in Node, Deno and Bun, run from a consumer project where the
 * packed package is installed: imports the package by its name (its ES module build), runs
 * exercise.mjs with the JSON input of the first argument and prints the result as JSON. Any failure
 * rejects the top-level await, so the process exits non-zero in every runtime.
 */
import * as sdk from '@partner-yield/sdk';
import { exercise } from './exercise.mjs';

const args = globalThis.Deno ? globalThis.Deno.args : globalThis.process.argv.slice(2);
const runtime = globalThis.Deno
  ? `deno ${globalThis.Deno.version.deno}`
  : globalThis.Bun
    ? `bun ${globalThis.Bun.version}`
    : `node ${globalThis.process.versions.node}`;
const result = await exercise(sdk, JSON.parse(args[0]));
console.log(JSON.stringify({ runtime, ...result }));
