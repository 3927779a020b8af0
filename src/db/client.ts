import { type Db, MongoClient } from 'mongodb';

/**
 * Short server-selection and socket timeouts make a query against an unreachable database
 * fail in about two seconds, so the API can answer 503 within the 3 s docs/operations.md promises;
 * the driver reconnects by itself when the server returns.
 */
export function createMongoClient(url: string): MongoClient {
  return new MongoClient(url, {
    serverSelectionTimeoutMS: 2000,
    connectTimeoutMS: 2000,
    socketTimeoutMS: 10000,
    maxPoolSize: 50,
    appName: 'course-access-groups',
  });
}

export async function ping(db: Db): Promise<void> {
  await db.command({ ping: 1 }, { timeoutMS: 2000 });
}
