/**
 * Liveness (`GET /health`: the process answers; no key, never rate limited) and readiness
 * (`GET /ready`: the database answers, Redis too when one is configured, and the chain runtime is
 * up, so that chain-backed endpoints do not answer 503 behind a ready instance). A 503 says which
 * part is not ready.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { type Database, pingDatabase } from '../../db/client.ts';
import type { ChainRuntimeState } from '../../http/dependencies.ts';
import { ApiError } from '../../http/errors.ts';
import { errorResponses } from '../../http/schemas.ts';
import { within } from '../../io-deadline.ts';
import type { Redis } from '../../redis.ts';

const READY_TIMEOUT_MS = 2000;

export const healthRoutes: FastifyPluginAsync<{
  db: Database;
  redis?: Redis | undefined;
  chainRuntime: () => ChainRuntimeState;
  demo: () => 'off' | 'computing_history' | 'ready';
}> = async (app, { db, redis, chainRuntime, demo }) => {
  app.get(
    '/health',
    {
      config: { anyText: true },
      schema: {
        operationId: 'getLiveness',
        summary: 'Liveness probe',
        description: 'Answers while the process runs. No key; never rate limited.',
        tags: ['Probes'],
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            data: Type.Object({ status: Type.Literal('ok') }),
          }),
        },
      },
    },
    async () => ({ success: true as const, data: { status: 'ok' as const } }),
  );

  app.get(
    '/ready',
    {
      config: { probe: true, anyText: true },
      schema: {
        operationId: 'getReadiness',
        summary: 'Readiness probe',
        description:
          'Answers 200 once the service can serve partner requests (its database, Redis when configured, and the chain runtime); 503 `service_unavailable` naming the part that is not ready otherwise. No key.',
        tags: ['Probes'],
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            data: Type.Object({
              status: Type.Literal('ready'),
              database: Type.Literal('ok'),
              redis: Type.Union([Type.Literal('ok'), Type.Literal('not_configured')]),
              chains: Type.Union([Type.Literal('ok'), Type.Literal('not_configured')], {
                description: 'The chain runtime (clients of every configured chain) is up',
              }),
              demo: Type.Union(
                [Type.Literal('off'), Type.Literal('computing_history'), Type.Literal('ready')],
                {
                  description:
                    'The local demo: `computing_history` while its daily history is computed (apy-history, fee-stats and yield-calc have no data yet), `ready` once every quickstart call returns data, `off` without a demo. Readiness does not wait for it.',
                },
              ),
            }),
          }),
          ...errorResponses(['service_unavailable', 'internal_error']),
        },
      },
    },
    async (request) => {
      try {
        await within(READY_TIMEOUT_MS, pingDatabase(db));
      } catch (err) {
        request.log.warn({ err }, 'readiness: database check failed');
        throw new ApiError('service_unavailable', 'The database is not reachable.');
      }
      if (redis) {
        try {
          await within(READY_TIMEOUT_MS, redis.ping());
        } catch (err) {
          request.log.warn({ err }, 'readiness: redis check failed');
          throw new ApiError('service_unavailable', 'Redis is not reachable.');
        }
      }
      // The runtime, not each RPC: an RPC outage fails only /position and /health reads (503
      // chain_rpc_unavailable, per request), hits every instance alike, and must not take the
      // database-backed reads out of the load balancer with it (docs/maintainers/decisions.md).
      const chains = chainRuntime();
      if (chains === 'starting') {
        throw new ApiError('service_unavailable', 'The chain runtime is starting.');
      }
      if (chains === 'failed') {
        throw new ApiError('service_unavailable', 'The chain runtime failed to start.');
      }
      return {
        success: true as const,
        data: {
          status: 'ready' as const,
          database: 'ok' as const,
          redis: redis ? ('ok' as const) : ('not_configured' as const),
          chains,
          demo: demo(),
        },
      };
    },
  );
};
