import { createMongoClient, MONGO_DEFAULTS } from '../../src/db/client';

/**
 * MONGO_URL's options come first: the service's timeouts are defaults for what the URL does not
 * name. The driver lets options given in code beat the URL's, so a default is passed only when
 * the URL is silent about it. Read from the client's options, as the driver will use them
 * (the constructor parses, it does not connect).
 */
const optionsOf = (url: string) => {
  const client = createMongoClient(url);
  const { serverSelectionTimeoutMS, socketTimeoutMS, connectTimeoutMS, maxPoolSize, appName } = client.options;
  return { serverSelectionTimeoutMS, socketTimeoutMS, connectTimeoutMS, maxPoolSize, appName };
};

test('a URL without options: the service defaults (2 s server selection and connect, 10 s socket)', () => {
  expect(optionsOf('mongodb://db.example:27017/')).toEqual(MONGO_DEFAULTS);
  expect(MONGO_DEFAULTS).toMatchObject({ serverSelectionTimeoutMS: 2000, connectTimeoutMS: 2000, socketTimeoutMS: 10000 });
});

test('serverSelectionTimeoutMS and socketTimeoutMS in the URL win over the defaults; the options it does not name keep them', () => {
  expect(optionsOf('mongodb://db.example:27017/?serverSelectionTimeoutMS=15000&socketTimeoutMS=60000')).toEqual({
    ...MONGO_DEFAULTS,
    serverSelectionTimeoutMS: 15000,
    socketTimeoutMS: 60000,
  });
});

test('option names in any case, a replica set of two hosts with a password, every default named: the URL decides each', () => {
  const url =
    'mongodb://u:p%40ss@a.example:27017,b.example:27017/db?replicaSet=rs0&SERVERSELECTIONTIMEOUTMS=500&sockettimeoutms=0&connectTimeoutMS=7000&maxPoolSize=5&appName=lms-sidecar';
  expect(optionsOf(url)).toEqual({ serverSelectionTimeoutMS: 500, socketTimeoutMS: 0, connectTimeoutMS: 7000, maxPoolSize: 5, appName: 'lms-sidecar' });
});
