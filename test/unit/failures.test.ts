// SPEC §5 failures: which handler failures are retried until they pass (a dependency away) and
// which get EVENT_MAX_ATTEMPTS attempts before the DLQ: one classification, kafkajs's `retriable`.
import { KafkaJSConnectionError, KafkaJSNonRetriableError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } from 'kafkajs';
import { MongoNetworkError, MongoServerError, MongoServerSelectionError, MongoWriteConcernError } from 'mongodb';
import { InvalidMessage } from '../../consumers/cloudevents';
import { HandlerFailure } from '../../consumers/dispatch';
import { describeError, isRetriable } from '../../consumers/failures';
import { DependencyUnavailable, fieldError, NotFound } from '../../src/errors';

const failure = (cause: unknown) => new HandlerFailure('evt-1', 'org.openedx.learning.user.account.activated.v1', { user_id: '7' }, cause);

test('a dependency away is retriable: DependencyUnavailable, the driver losing the database, a kafkajs error that says so', () => {
  expect(isRetriable(new DependencyUnavailable('schema registry'))).toBe(true);
  expect(isRetriable(new MongoNetworkError('connection reset'))).toBe(true);
  expect(isRetriable(new MongoServerSelectionError('no server', { servers: new Map(), type: 'Unknown' } as never))).toBe(true);
  expect(isRetriable(new KafkaJSConnectionError('broker away'))).toBe(true);
  // kafkajs's own retries ran out, but what failed may still pass.
  expect(isRetriable(new KafkaJSNumberOfRetriesExceeded(new KafkaJSConnectionError('broker away'), { retryCount: 2, retryTime: 300 }))).toBe(true);
});

test('anything else is not: a bug, a refusal, an invalid message, a kafkajs error that says so, an error nobody classified', () => {
  expect(isRetriable(new TypeError("Cannot read properties of undefined (reading 'id')"))).toBe(false);
  expect(isRetriable(new Error('boom'))).toBe(false);
  expect(isRetriable('a string thrown')).toBe(false);
  expect(isRetriable(new MongoServerError({ message: 'E11000 duplicate key', code: 11000 }))).toBe(false);
  expect(isRetriable(fieldError('name', 'too long'))).toBe(false);
  expect(isRetriable(new NotFound())).toBe(false);
  expect(isRetriable(new InvalidMessage('value is not JSON'))).toBe(false);
  expect(isRetriable(new KafkaJSNonRetriableError('message too large'))).toBe(false);
  expect(isRetriable(new KafkaJSProtocolError({ message: 'not authorized', type: 'TOPIC_AUTHORIZATION_FAILED', code: 29, retriable: false } as never))).toBe(
    false,
  );
  expect(isRetriable(new KafkaJSNumberOfRetriesExceeded(new TypeError('bug'), { retryCount: 2, retryTime: 300 }))).toBe(false);
});

test('a HandlerFailure carries the classification of its cause, and InvalidMessage says it is not retriable', () => {
  expect(failure(new MongoNetworkError('connection reset')).retriable).toBe(true);
  expect(failure(new DependencyUnavailable('database')).retriable).toBe(true);
  expect(failure(new Error('tombstone kept changing')).retriable).toBe(false);
  expect(isRetriable(failure(new MongoNetworkError('connection reset')))).toBe(true);
  expect(isRetriable(failure(new Error('bug')))).toBe(false);
  expect(new InvalidMessage('x').retriable).toBe(false);
});

test('an error as logged and dead-lettered names no email, even when the driver quotes one', () => {
  const err = new MongoServerError({ message: 'E11000 duplicate key error dup key: { email: "Kim.Lee+x@example.org" }', code: 11000 });
  const shown = describeError(failure(err).cause);
  expect(shown).toMatchObject({ name: 'MongoServerError', code: 11000 });
  expect(JSON.stringify(shown)).not.toMatch(/@/);
  expect(shown.message).toContain('[redacted]');
  expect(describeError('plain kim@example.org')).toEqual({ message: 'plain [redacted]' });
});

test('transient server errors are retriable: not primary, shutting down, a write concern not met, or labelled retryable by the server', () => {
  const server = (fields: Record<string, unknown>) => new MongoServerError({ message: 'server said', ...fields });
  expect(isRetriable(server({ code: 10107, codeName: 'NotWritablePrimary' }))).toBe(true);
  expect(isRetriable(server({ code: 91, codeName: 'ShutdownInProgress' }))).toBe(true);
  expect(isRetriable(server({ code: 11602, codeName: 'InterruptedDueToReplStateChange' }))).toBe(true);
  expect(isRetriable(server({ code: 2, codeName: 'BadValue', errorLabels: ['RetryableWriteError'] }))).toBe(true);
  expect(isRetriable(server({ code: 0, writeConcernError: { code: 64, errmsg: 'waiting for replication timed out' } }))).toBe(true);
  expect(isRetriable(new MongoWriteConcernError({ writeConcernError: { code: 64, errmsg: 'wtimeout' } } as never))).toBe(true);
  expect(failure(server({ code: 189, codeName: 'PrimarySteppedDown' })).retriable).toBe(true);
  // A server error that will answer the same again is not.
  expect(isRetriable(server({ code: 2, codeName: 'BadValue' }))).toBe(false);
});
