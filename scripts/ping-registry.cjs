// Exits 0 when the Confluent-compatible schema registry at argv[2] (its API root) answers. Used
// by stack.sh and scripts/test.sh to wait.
fetch(`${process.argv[2].replace(/\/+$/, '')}/schemas/types`, { signal: AbortSignal.timeout(1000) })
  .then((res) => process.exit(res.ok ? 0 : 1))
  .catch(() => process.exit(1));
