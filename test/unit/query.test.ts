// docs/api.md filters: search terms are literal text, split on spaces and commas; booleans' spellings;
// a repeated parameter counts with its last value.
import fc from 'fast-check';
import { literalPattern, searchFilter, searchTerms } from '../../src/db/search-index';
import { Invalid } from '../../src/errors';
import { userListQuerySchema } from '../../src/features/users/schema';
import { toHttpError } from '../../src/http/error-responses';
import { lastValues, queryParser } from '../../src/http/query';
import { createLogger } from '../../src/log';
import { toBoolean } from '../../src/validation';

test('a literal pattern matches exactly its text, whatever characters it holds', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary', minLength: 1 }), (text, other) => {
      const exact = new RegExp(`^${literalPattern(text)}$`, 'su');
      expect(exact.test(text)).toBe(true);
      if (other !== text) expect(exact.test(other)).toBe(false);
    }),
    { numRuns: 500 },
  );
  expect(literalPattern('a.*(b)[c]{d}|e^$\\+?')).toBe('a\\.\\*\\(b\\)\\[c\\]\\{d\\}\\|e\\^\\$\\\\\\+\\?');
  expect(literalPattern('nul\u0000')).toBe('nul\\x00');
});

test('terms split on spaces and commas; empty terms are dropped; each term must match some field', () => {
  expect(searchTerms(' alice, bob\tcarol,,')).toEqual(['alice', 'bob', 'carol']);
  expect(searchTerms('')).toEqual([]);
  expect(searchTerms(undefined)).toEqual([]);
  expect(searchFilter(['name'], ' , ')).toEqual({});
  expect(searchFilter(['a', 'b'], 'x.y z')).toEqual({
    $and: [
      { $or: [{ a: { $regex: 'x\\.y', $options: 'i' } }, { b: { $regex: 'x\\.y', $options: 'i' } }] },
      { $or: [{ a: { $regex: 'z', $options: 'i' } }, { b: { $regex: 'z', $options: 'i' } }] },
    ],
  });
});

test('booleans: true/True/1 and false/False/0', () => {
  expect(['true', 'True', '1'].map(toBoolean)).toEqual([true, true, true]);
  expect(['false', 'False', '0'].map(toBoolean)).toEqual([false, false, false]);
  expect(toBoolean(undefined)).toBeUndefined();
});

test('the query schema validates, keeps the last of repeated values and ignores unknown parameters', () => {
  const parse = queryParser(userListQuerySchema);
  expect(lastValues({ a: ['1', '2'], b: 'x' })).toEqual({ a: '2', b: 'x' });
  expect(parse({ group: ['x', '7'], no_group: 'True', unknown: 'y' })).toEqual({ group: '7', no_group: 'True' });
  const refused = (() => {
    try {
      parse({ group: '7x', no_group: 'yes', limit: '-1' });
    } catch (err) {
      return err;
    }
  })() as Invalid;
  expect(refused).toBeInstanceOf(Invalid);
  expect(refused.fields).toEqual({
    group: ['A valid integer is required.'],
    no_group: ['Must be a valid boolean.'],
    limit: ['A valid non-negative integer is required.'],
  });
  // Over HTTP: a 400 whose body is those field errors.
  expect(toHttpError(refused, createLogger('silent'))).toMatchObject({ status: 400, body: refused.fields });
});
