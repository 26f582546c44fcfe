/**
 * The contract check: every response an API test receives is validated against the OpenAPI
 * document the app itself serves (/openapi.json), by an independent validator (Ajv). A route's
 * documented response for the status must exist and match; unknown routes must answer the
 * documented error envelope. Violations are collected, and `assertClean()` fails the suite.
 */
import { gunzipSync } from 'node:zlib';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { buildApp } from '../../src/server/app.ts';

type App = Awaited<ReturnType<typeof buildApp>>;

type Schema = Record<string, unknown>;
interface Doc {
  paths: Record<
    string,
    Record<
      string,
      { responses: Record<string, { content?: { 'application/json'?: { schema: Schema } } }> }
    >
  >;
  components: { schemas: Record<string, Schema> };
}

export interface ContractCheck {
  checked: () => number;
  violations: () => string[];
  assertClean: () => void;
}

/** Adds the check to an app that is not ready yet; the document is read once the app is ready. */
export function attachContractCheck(app: App): ContractCheck {
  let doc: Doc | undefined;
  const ajv = new Ajv2020.default({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const compiled = new Map<Schema, ReturnType<typeof ajv.compile>>();
  const validatorFor = (schema: Schema) => {
    let v = compiled.get(schema);
    if (!v) {
      v = ajv.compile({ ...schema, components: doc!.components });
      compiled.set(schema, v);
    }
    return v;
  };
  const violations: string[] = [];
  let checked = 0;

  app.addHook('onSend', async (request, reply, payload) => {
    if (request.url.startsWith('/docs') || request.url === '/openapi.json') return payload;
    doc ??= app.swagger() as unknown as Doc;
    const route = request.routeOptions.url;
    const status = String(reply.statusCode);
    const where = `${request.method} ${request.url} → ${status}`;
    let schema: Schema | undefined;
    if (!route) {
      schema = doc.components.schemas.Error;
    } else {
      const path = route.replace(/:([A-Za-z_]+)/g, '{$1}');
      const op = doc.paths[path]?.[request.method.toLowerCase()];
      if (!op) {
        violations.push(`${where}: route ${path} is not in the document`);
        return payload;
      }
      schema = op.responses[status]?.content?.['application/json']?.schema;
      if (!schema) {
        violations.push(`${where}: status ${status} is not documented`);
        return payload;
      }
    }
    // A gzip answer (the client asked for it) is checked as the client reads it: decoded.
    const text =
      reply.getHeader('content-encoding') === 'gzip'
        ? gunzipSync(payload as Buffer).toString('utf8')
        : String(payload);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      violations.push(`${where}: body is not JSON`);
      return payload;
    }
    const validate = validatorFor(schema!);
    if (!validate(body)) {
      violations.push(`${where}: ${ajv.errorsText(validate.errors)} in ${text.slice(0, 200)}`);
    }
    checked++;
    return payload;
  });

  return {
    checked: () => checked,
    violations: () => [...violations],
    assertClean: () => {
      if (violations.length)
        throw new Error(`responses off the OpenAPI document:\n${violations.join('\n')}`);
    },
  };
}
