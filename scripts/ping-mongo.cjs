// Exits 0 when a MongoDB-protocol server at argv[2] answers `ping`. Used by stack.sh to wait.
const { MongoClient } = require('mongodb');
const client = new MongoClient(process.argv[2], { serverSelectionTimeoutMS: 1000, connectTimeoutMS: 1000 });
client
  .db('admin')
  .command({ ping: 1 })
  .then(() => client.close().then(() => process.exit(0)))
  .catch(() => process.exit(1));
