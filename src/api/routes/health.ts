/**
 * Liveness (`GET /health`: the process answers; no key, never rate limited) and readiness
 * (`GET /ready`: the database answers too).
 */
import { Type } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { Database } from '../../db/client.ts';
import { ApiError } from '../errors.ts';

const READY_TIMEOUT_MS = 2000;

export const healthRoutes: FastifyPluginAsync<{ db: Database }> = async (app, { db }) => {
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
            data: Type.Object({ status: Type.Literal('ready'), database: Type.Literal('ok') }),
          }),
        },
      },
    },
    async (request) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          db.query('SELECT 1'),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error('database timeout')), READY_TIMEOUT_MS);
          }),
        ]);
      } catch (err) {
        request.log.warn({ err }, 'readiness check failed');
        throw new ApiError('service_unavailable', 'The database is not reachable.');
      } finally {
        clearTimeout(timer);
      }
      return {
        success: true as const,
        data: { status: 'ready' as const, database: 'ok' as const },
      };
    },
  );
};
