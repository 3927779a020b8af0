// SPEC §7: no batch of changes is ever too large to send. The relay cuts what one step publishes
// into sends bounded by count and bytes, in order (src/changes/relay.ts, sendChunks).
import { sendChunks } from '../../src/changes/relay';

const item = (n: number, bytes: number) => ({ n, message: { key: `k${n}`, value: 'v'.repeat(bytes), headers: {} } });

test('sends hold at most the given count and bytes, keep the order, and an event larger than the bound goes alone', () => {
  const items = [item(1, 40), item(2, 40), item(3, 40), item(4, 200), item(5, 10), item(6, 10), item(7, 10), item(8, 10)];
  const chunks = sendChunks(items, 3, 100);
  expect(chunks.map((c) => c.map((i) => i.n))).toEqual([[1, 2], [3], [4], [5, 6, 7], [8]]);
  expect(chunks.flat()).toEqual(items);
  expect(sendChunks([], 3, 100)).toEqual([]);
});
