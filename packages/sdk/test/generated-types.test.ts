/**
 * src/generated/openapi.ts and src/generated/operations.ts must be what the service's current /openapi.json generates: a route or
 * schema change without `npm run generate -w @partner-yield/sdk` fails here, so the SDK's types
 * cannot drift from the API.
 */
import { expect, it } from 'vitest';
import {
  committedOperations,
  committedTypes,
  renderTypes,
  serviceDocument,
} from '../scripts/openapi-types.ts';
import { renderOperations } from '../scripts/operations.ts';

it('the generated types match the document the service serves', async () => {
  const rendered = await renderTypes(await serviceDocument());
  // On a mismatch: npm run generate -w @partner-yield/sdk
  expect(committedTypes() === rendered, 'src/generated/openapi.ts is stale').toBe(true);
});

it("the generated operation table and read methods match the document's operations", async () => {
  const rendered = renderOperations(await serviceDocument());
  expect(committedOperations() === rendered, 'src/generated/operations.ts is stale').toBe(true);
});
