/** Opens the database the configuration names: PostgreSQL when DATABASE_URL is set, else PGlite. */
import path from 'node:path';
import type { Config } from '../config.ts';
import { createDatabase, type Database } from './client.ts';

export function openDatabase(config: Config): Promise<Database> {
  return config.DATABASE_URL
    ? createDatabase({
        engine: 'postgres',
        url: config.DATABASE_URL,
        poolMax: config.DATABASE_POOL_MAX,
        preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
      })
    : createDatabase({ engine: 'pglite', dataDir: path.join(config.DATA_DIR, 'pglite') });
}
