import type { Filter } from 'mongodb';
import { type AuditDoc, COLLECTIONS } from '../../db/collections';
import type { Page, Tenant } from '../../db/tenant';
import type { Infer } from '../../validation';
import type { auditListQuerySchema, auditRecordSchema } from './schema';

type AuditRecord = Infer<typeof auditRecordSchema>;
type AuditListQuery = Infer<typeof auditListQuerySchema>;

const toRecord = (d: AuditDoc): AuditRecord =>
  ({
    id: d._id,
    time: d.time.toISOString(),
    organization: d.org,
    actor: d.actor,
    action: d.action,
    resource: d.resource,
    resource_id: d.resource_id,
    cause: d.cause,
    request_id: d.request_id,
    before: d.before,
    after: d.after,
  }) as AuditRecord;

/** The organization's audit trail, newest first (written by the change relay, src/changes/relay.ts). */
export function auditLogQueries(tenant: Tenant) {
  const records = tenant.collection<AuditDoc>(COLLECTIONS.auditLog);
  return {
    async list(page: Page, query: AuditListQuery): Promise<{ count: number; results: AuditRecord[] }> {
      const filter: Filter<AuditDoc> = {};
      if (query.resource) filter.resource = query.resource;
      if (query.resource_id) filter.resource_id = query.resource_id;
      if (query.actor) filter.actor_id = query.actor;
      if (query.since || query.until) {
        filter.time = {
          ...(query.since ? { $gte: new Date(query.since) } : {}),
          ...(query.until ? { $lt: new Date(query.until) } : {}),
        };
      }
      const [count, docs] = await Promise.all([
        records.countDocuments(filter),
        records.find(filter).sort({ time: -1, _id: -1 }).skip(page.offset).limit(page.limit).toArray(),
      ]);
      return { count, results: docs.map(toRecord) };
    },
  };
}
