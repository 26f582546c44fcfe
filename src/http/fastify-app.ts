/** The Fastify instance the service builds (its logger is the service's pino logger), before routes add a type provider. */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../logger.ts';

export type BaseApp = FastifyInstance<Server, IncomingMessage, ServerResponse, Logger>;
