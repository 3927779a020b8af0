import type { Document } from 'mongodb';
import { actorId } from '../db/change-context';
import { type AuditDoc, COLLECTIONS, type OutboxDoc } from '../db/collections';
import { changeKind } from './events';

/** A stored document as the audit log shows it: its fields, without storage keys. */
function fields(doc: Document | null | undefined): Document | null {
  if (!doc) return null;
  const { _id, org, ...rest } = doc;
  return rest;
}

/** JSON with sorted keys: two documents with the same fields in another order are the same. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v,
  );
}

/**
 * The audit records of one resolved outbox entry: one per record it changed, with the fields
 * before (as the intent saw them) and after (`after[i]`: the record as the relay read it, or as
 * the next intent of the same record saw it). A record that did not change (the write never
 * happened, or changed nothing) has none: a refused write leaves no audit record.
 */
export function buildAuditRecords(entry: OutboxDoc, after: (Document | null)[]): AuditDoc[] {
  if (!entry.audit) return [];
  const k = changeKind(entry.c);
  const records: AuditDoc[] = [];
  entry.k.forEach((key, i) => {
    const before = fields(entry.b?.[i]);
    const doc = after[i];
    // A record now in another organization is gone from this one's point of view.
    const now = doc && doc.org === entry.o ? fields(doc) : null;
    if (canonical(before) === canonical(now)) return;
    const shown = (now ?? before)!;
    records.push({
      _id: `${entry._id}.${i}`,
      org: entry.o,
      time: entry.t,
      actor: entry.actor,
      actor_id: actorId(entry.actor),
      cause: entry.cause,
      request_id: entry.rid,
      action: before === null ? 'create' : now === null ? 'delete' : 'update',
      resource: k.resource,
      resource_id: entry.c === COLLECTIONS.siteConfigurations ? entry.o : String(shown.id ?? key),
      before,
      after: now,
    });
  });
  return records;
}
