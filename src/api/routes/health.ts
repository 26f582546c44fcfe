/**
 * Liveness (`GET /health`: the process answers; no key, never rate limited) and readiness
 * (`GET /ready`: the database answers, and Redis too when one is configured).
 */
import { Type } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { Database } from '../../db/client.ts';
import type { Redis } from '../../redis.ts';
import { ApiError } from '../errors.ts';
import { errorResponses } from '../schemas.ts';

const READY_TIMEOUT_MS = 2000;

/** Resolves with fn's result, or rejects when it takes longer than ms. */
async function within<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      fn(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export const healthRoutes: FastifyPluginAsync<{ db: Database; redis?: Redis | undefined }> = async (
  app,
  { db, redis },
) => {
  app.get(
    '/health',
    {
      schema: {
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
      schema: {
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            data: Type.Object({
              status: Type.Literal('ready'),
              database: Type.Literal('ok'),
              redis: Type.Union([Type.Literal('ok'), Type.Literal('not_configured')]),
            }),
          }),
          ...errorResponses(['service_unavailable', 'internal_error']),
        },
      },
    },
    async (request) => {
      try {
        await within(READY_TIMEOUT_MS, () => db.query('SELECT 1'));
      } catch (err) {
        request.log.warn({ err }, 'readiness: database check failed');
        throw new ApiError('service_unavailable', 'The database is not reachable.');
      }
      if (redis) {
        try {
          await within(READY_TIMEOUT_MS, () => redis.ping());
        } catch (err) {
          request.log.warn({ err }, 'readiness: redis check failed');
          throw new ApiError('service_unavailable', 'Redis is not reachable.');
        }
      }
      return {
        success: true as const,
        data: {
          status: 'ready' as const,
          database: 'ok' as const,
          redis: redis ? ('ok' as const) : ('not_configured' as const),
        },
      };
    },
  );
};
