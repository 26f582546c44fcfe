/** Repository of the partners table. */
import { newId } from '../ids.ts';
import type { Queryable } from './client.ts';

export interface Partner {
  id: string;
  name: string;
  createdAt: Date;
}

interface PartnerRow {
  id: string;
  name: string;
  created_at: Date;
}

const toPartner = (r: PartnerRow): Partner => ({ id: r.id, name: r.name, createdAt: r.created_at });

export function createPartnersRepo(db: Queryable) {
  return {
    async create(name: string): Promise<Partner> {
      const { rows } = await db.query<PartnerRow>(
        'INSERT INTO partners (id, name) VALUES ($1, $2) RETURNING id, name, created_at',
        [newId('ptn'), name],
      );
      return toPartner(rows[0]!);
    },
    async findByName(name: string): Promise<Partner | undefined> {
      const { rows } = await db.query<PartnerRow>(
        'SELECT id, name, created_at FROM partners WHERE name = $1',
        [name],
      );
      return rows[0] && toPartner(rows[0]);
    },
    async list(): Promise<Partner[]> {
      const { rows } = await db.query<PartnerRow>(
        'SELECT id, name, created_at FROM partners ORDER BY created_at, id',
      );
      return rows.map(toPartner);
    },
  };
}
