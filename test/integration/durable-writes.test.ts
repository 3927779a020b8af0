import type { CommandStartedEvent, MongoClient } from 'mongodb';
import { createMongoClient } from '../../src/db/client';
import { COLLECTIONS } from '../../src/db/collections';
import { acquireLease, releaseLease, renewLease } from '../../src/db/lease';
import { deleteIntents, dropIntent, narrowIntent, openIntent, readOutbox, reopenIntent } from '../../src/db/outbox';
import { MONGO_URL, uniqueName } from '../helpers/stack';

/**
 * The writes that coordinate processes (a lease) or must never be lost (the outbox's intents) ask
 * for `w: 'majority'`: seen on the wire, in the driver's command monitoring, as the local stack's
 * FerretDB receives them (and accepts them).
 */
let client: MongoClient;
const commands: CommandStartedEvent[] = [];
const name = uniqueName('durable');

beforeAll(() => {
  client = createMongoClient(`${MONGO_URL.replace(/\/?$/, '/')}?monitorCommands=true`);
  client.on('commandStarted', (e) => {
    if (e.databaseName === name) commands.push(e);
  });
});
afterAll(async () => {
  await client.db(name).dropDatabase();
  await client.close();
});

const WRITES = new Set(['insert', 'update', 'delete', 'findAndModify']);
/** The write commands sent to `collection`, with the write concern each carried. */
const writesTo = (collection: string) =>
  commands
    .filter((e) => WRITES.has(e.commandName) && e.command[e.commandName] === collection)
    .map((e) => ({ command: e.commandName, writeConcern: e.command.writeConcern }));

test('the lease: taken, renewed and released with writeConcern majority, which FerretDB accepts', async () => {
  const db = client.db(name);
  expect(await acquireLease(db, 'relay', 'a', 15000)).toBe(true);
  expect(await acquireLease(db, 'relay', 'b', 15000)).toBe(false);
  expect(await renewLease(db, 'relay', 'a', 15000, 3)).toBe(3);
  await releaseLease(db, 'relay', 'a');
  expect(await acquireLease(db, 'relay', 'b', 15000)).toBe(true);
  const writes = writesTo(COLLECTIONS.leases);
  expect(writes.map((w) => w.command)).toEqual(['update', 'update', 'findAndModify', 'update', 'update']);
  for (const w of writes) expect(w.writeConcern).toEqual({ w: 'majority' });
});

test("the outbox's intents: opened, reopened, narrowed, dropped and deleted with writeConcern majority", async () => {
  const db = client.db(name);
  const intent = await openIntent(db, COLLECTIONS.groups, 'org-a', ['1', '2'], undefined);
  const again = await reopenIntent(db, intent);
  await narrowIntent(db, again, ['1']);
  expect((await readOutbox(db, 10)).map((d) => d.k)).toEqual([['1', '2'], ['1']]);
  await dropIntent(db, intent);
  await deleteIntents(db, [again.id]);
  expect(await readOutbox(db, 10)).toEqual([]);
  const writes = writesTo(COLLECTIONS.outbox);
  expect(writes.map((w) => w.command)).toEqual(['insert', 'insert', 'update', 'delete', 'delete']);
  for (const w of writes) expect(w.writeConcern).toEqual({ w: 'majority' });
});
