// docs/operations.md "Expand, then contract": the lowest shape a process must know to serve on a
// database, from the upgrades it has been through, and who refuses.
import { COLLECTIONS } from '../../src/db/collections';
import { newerShapeReason, servingFloor, UPGRADES, type Upgrade } from '../../src/db/upgrades';

const upgrade = (name: string, servesFrom?: number): Upgrade => ({
  name,
  collection: COLLECTIONS.groups,
  unit: 'groups',
  projection: {},
  isOld: () => false,
  upgrade: () => ({ deleteOne: { filter: {} } }),
  ...(servesFrom === undefined ? {} : { servesFrom }),
});
const n = UPGRADES.length;

test("this version's upgrades are all contracts: only processes that know them all serve", () => {
  expect(servingFloor(UPGRADES)).toBe(n);
});

test('an expand keeps the floor where it was; a contract raises it to itself, or to the expand it names', () => {
  const expand = upgrade('expand', n);
  expect(servingFloor([...UPGRADES, expand])).toBe(n);
  expect(servingFloor([...UPGRADES, expand, upgrade('contract')])).toBe(n + 2);
  expect(servingFloor([...UPGRADES, expand, upgrade('contract after its expand', n + 1)])).toBe(n + 1);
  // An expand never lowers a floor an earlier contract raised.
  expect(servingFloor([...UPGRADES, upgrade('contract'), upgrade('expand of an older shape', n - 3)])).toBe(n + 1);
});

test('a process below the floor refuses, saying why; one at or above it serves a newer shape', () => {
  expect(newerShapeReason({ shape: n + 1, floor: n }, n)).toBeNull();
  expect(newerShapeReason({ shape: n + 2, floor: n + 2 }, n)).toBe(
    `stored data is of shape ${n + 2}, newer than this version knows (${n}): a newer version has upgraded it`,
  );
  expect(newerShapeReason({ shape: n + 2, floor: n + 1 }, n + 1)).toBeNull();
});

test('the floor of the upgrades done so far (each at its place), and no servesFrom above its own place', () => {
  const contract = upgrade('contract');
  const list = [...UPGRADES, upgrade('expand', n), contract];
  expect(servingFloor(list, (u) => u !== contract)).toBe(n);
  expect(() => servingFloor([...UPGRADES, upgrade('wrong', n + 2)])).toThrow(`upgrade wrong: servesFrom ${n + 2} is above its place (${n + 1})`);
});
