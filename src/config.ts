import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FromSchema } from 'json-schema-to-ts';
import { MongoClient } from 'mongodb';
import { ServiceError } from './errors';
import { KafkaSettingError, kafkaSecurityOptions } from './kafka-security';
import { dlqTopic } from './kafka-topics';
import { type LmsIssuer, type LmsKeySet, LmsSettingError, parseLmsIssuers, parseLmsKeySet } from './lms-jwt-settings';
import { LmsOauthSettingError, type LmsOauthSettings, parseLmsOauth } from './lms-oauth-settings';
import { RegistrySettingError, registryClientSettings } from './registry-settings';
import { ajv, fromEnvironmentStrings } from './validation';

/** The environment the service reads (docs/configuration.md). One schema: validation and the type. */
export const configSchema = {
  type: 'object',
  properties: {
    PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 8000 },
    MONGO_URL: { type: 'string', pattern: '^mongodb(\\+srv)?://', default: 'mongodb://127.0.0.1:27017/' },
    MONGO_DB: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,63}$', default: 'course_access_groups' },
    KAFKA_BROKERS: { type: 'string', pattern: '^[^,\\s]+(,[^,\\s]+)*$', default: '127.0.0.1:9092' },
    /** TLS to the brokers (src/kafka-security.ts): on/off, a CA file (else the system's CAs), a client certificate and key for mutual TLS. */
    KAFKA_SSL: { type: 'string', enum: ['on', 'off'], default: 'off' },
    KAFKA_SSL_CA_FILE: { type: 'string', minLength: 1 },
    KAFKA_SSL_CERT_FILE: { type: 'string', minLength: 1 },
    KAFKA_SSL_KEY_FILE: { type: 'string', minLength: 1 },
    /** SASL to the brokers: the mechanism (case-insensitive), the user, and the password or a file holding it. */
    KAFKA_SASL_MECHANISM: { type: 'string', enum: ['plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer', 'aws-msk-iam'] },
    KAFKA_SASL_USERNAME: { type: 'string', minLength: 1 },
    KAFKA_SASL_PASSWORD: { type: 'string', minLength: 1 },
    KAFKA_SASL_PASSWORD_FILE: { type: 'string', minLength: 1 },
    /** OAUTHBEARER's token, in a file its issuer keeps fresh (read at each authentication). */
    KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: { type: 'string', minLength: 1 },
    /** aws-msk-iam (MSK's IAM access control): the cluster's region; credentials from the AWS SDK's default chain. */
    KAFKA_SASL_AWS_REGION: { type: 'string', pattern: '^[a-z]{2}(-[a-z]+)+-\\d$' },
    KAFKA_GROUP_ID: { type: 'string', minLength: 1, default: 'course-access-groups' },
    KAFKA_TOPICS: {
      type: 'string',
      pattern: '^[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*$',
      default: 'user-account-activated,user-lifecycle,course-catalog',
    },
    JWT_SECRET: { type: 'string', minLength: 16 },
    JWT_PUBLIC_KEY: { type: 'string', pattern: '-----BEGIN PUBLIC KEY-----' },
    JWT_JWKS_URL: { type: 'string', pattern: '^https?://' },
    JWT_ALGORITHM: { type: 'string', enum: ['RS256', 'ES256'] },
    JWT_ISSUER: { type: 'string', minLength: 1 },
    JWT_AUDIENCE: { type: 'string', minLength: 1 },
    /** The LMS's trust path (docs/api.md): its JWT_ISSUERS list as JSON, and its JWT_PUBLIC_SIGNING_JWK_SET string. */
    LMS_JWT_ISSUERS: { type: 'string', minLength: 1 },
    LMS_JWT_PUBLIC_SIGNING_JWK_SET: { type: 'string', minLength: 1 },
    /** The console's sign-in through the LMS (src/lms-oauth-settings.ts): on only with a client id. */
    LMS_OAUTH_URL: { type: 'string', pattern: '^https?://' },
    LMS_OAUTH_INTERNAL_URL: { type: 'string', pattern: '^https?://' },
    LMS_OAUTH_CLIENT_ID: { type: 'string', minLength: 1 },
    LMS_OAUTH_CLIENT_SECRET: { type: 'string', minLength: 1 },
    LMS_OAUTH_CLIENT_SECRET_FILE: { type: 'string', minLength: 1 },
    /** The service's root as browsers see it: the OAuth2 redirect URI is built on it. */
    PUBLIC_URL: { type: 'string', pattern: '^https?://' },
    LOG_LEVEL: { type: 'string', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' },
    SERVICE_ROLE: { type: 'string', enum: ['all', 'api', 'consumer'], default: 'all' },
    /** Attempts at an event whose failure is not retriable before it goes to the DLQ (10: about 45 s of backoff). */
    EVENT_MAX_ATTEMPTS: { type: 'integer', minimum: 1, maximum: 1000, default: 10 },
    /** The most messages of one partition applied together (consumers/batch.ts); 1 applies every message alone. */
    EVENT_BATCH_SIZE: { type: 'integer', minimum: 1, maximum: 5000, default: 500 },
    /**
     * The bounds of a record's history (docs/event-core.md, "Bounds"): entries this many days of
     * event time behind the newest fold into its floor. Set it to the topics' retention (Kafka's
     * default is 7 days): past it no redelivery comes, and a new event older than the floor
     * changes nothing.
     */
    EVENT_HISTORY_DAYS: { type: 'integer', minimum: 1, maximum: 3650, default: 7 },
    /** At most this many entries a record keeps before its oldest fold into the floor (a few tens of KiB a record). */
    EVENT_HISTORY_ENTRIES: { type: 'integer', minimum: 16, maximum: 4096, default: 256 },
    /**
     * How long the broker waits for a silent consumer before giving its partitions to the others
     * (a killed process's partitions wait this long); the heartbeat is a tenth of it. The bounds
     * are Kafka's default group.min/max.session.timeout.ms: the broker refuses a value outside its own.
     */
    KAFKA_SESSION_TIMEOUT_MS: { type: 'integer', minimum: 6000, maximum: 1800000, default: 30000 },
    /** The change relay's lease (src/changes/relay.ts): a dead holder's successor takes over within it. */
    CHANGE_RELAY_LEASE_MS: { type: 'integer', minimum: 3000, maximum: 600000, default: 15000 },
    /** Whether `X-Forwarded-Host`/`-Proto` shape links: only behind a proxy that sets them (docs/operations.md). */
    TRUST_PROXY: { type: 'string', enum: ['on', 'off'], default: 'off' },
    ACCESS_CACHE: { type: 'string', enum: ['on', 'off'], default: 'on' },
    /**
     * What the name of each dead-letter topic starts with: `<prefix><topic>.dlq` (src/kafka-topics.ts).
     * The chart derives it from the release, as it does the group and the changes topic.
     */
    KAFKA_DLQ_PREFIX: { type: 'string', pattern: '^[A-Za-z0-9._-]{0,200}$', default: '' },
    /** Where change events go; empty turns them off (see loadConfig: empty is not "unset" here). */
    CHANGES_TOPIC: { type: 'string', pattern: '^[A-Za-z0-9._-]{0,249}$', default: 'course-access-groups.changes' },
    AUDIT_LOG: { type: 'string', enum: ['on', 'off'], default: 'on' },
    AUDIT_RETENTION_DAYS: { type: 'integer', minimum: 1, maximum: 36500, default: 365 },
    /** The organization of events that name none (a single-site LMS; docs/events.md). */
    DEFAULT_ORGANIZATION: { type: 'string', minLength: 1, maxLength: 255 },
    /** The Confluent-compatible API of the schema registry the Open edX event bus's Avro names (consumers/avro.ts). */
    SCHEMA_REGISTRY_URL: { type: 'string', pattern: '^https?://[^\\s]+$' },
    /** Basic auth (https only) and TLS of the registry client, as Kafka's (src/registry-settings.ts): files are read again when they change. */
    SCHEMA_REGISTRY_USERNAME: { type: 'string', minLength: 1 },
    SCHEMA_REGISTRY_PASSWORD: { type: 'string', minLength: 1 },
    SCHEMA_REGISTRY_PASSWORD_FILE: { type: 'string', minLength: 1 },
    SCHEMA_REGISTRY_CA_FILE: { type: 'string', minLength: 1 },
    SCHEMA_REGISTRY_CERT_FILE: { type: 'string', minLength: 1 },
    SCHEMA_REGISTRY_KEY_FILE: { type: 'string', minLength: 1 },
  },
  additionalProperties: false,
  required: [
    'PORT',
    'MONGO_URL',
    'MONGO_DB',
    'KAFKA_BROKERS',
    'KAFKA_SSL',
    'KAFKA_GROUP_ID',
    'KAFKA_TOPICS',
    'LOG_LEVEL',
    'SERVICE_ROLE',
    'EVENT_MAX_ATTEMPTS',
    'EVENT_BATCH_SIZE',
    'EVENT_HISTORY_DAYS',
    'EVENT_HISTORY_ENTRIES',
    'KAFKA_SESSION_TIMEOUT_MS',
    'CHANGE_RELAY_LEASE_MS',
    'TRUST_PROXY',
    'ACCESS_CACHE',
    'CHANGES_TOPIC',
    'KAFKA_DLQ_PREFIX',
    'AUDIT_LOG',
    'AUDIT_RETENTION_DAYS',
  ],
} as const;

type RawConfig = FromSchema<typeof configSchema>;

export interface Config extends Readonly<Omit<RawConfig, 'KAFKA_BROKERS' | 'KAFKA_TOPICS' | 'LMS_JWT_ISSUERS' | 'LMS_JWT_PUBLIC_SIGNING_JWK_SET'>> {
  readonly KAFKA_BROKERS: readonly string[];
  readonly KAFKA_TOPICS: readonly string[];
  /** Parsed and checked at start-up (src/lms-jwt-settings.ts); both set or neither. */
  readonly LMS_JWT_ISSUERS?: readonly LmsIssuer[];
  readonly LMS_JWT_PUBLIC_SIGNING_JWK_SET?: LmsKeySet;
  /** The console's sign-in through the LMS, parsed (src/lms-oauth-settings.ts); null when off. */
  readonly LMS_OAUTH: LmsOauthSettings | null;
}

/** A missing or invalid setting: fixed by the operator, never by waiting. */
export class ConfigError extends ServiceError {
  readonly retriable = false;
}

const KEYS = Object.keys(configSchema.properties);

/**
 * Reads the settings from `env`, applies defaults and refuses a missing or invalid one with a
 * message naming it. Empty strings count as unset, as a shell `FOO=` usually means.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const raw: Record<string, unknown> = {};
  for (const key of KEYS) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  // CHANGES_TOPIC= (set, empty) is how change events are turned off.
  if (env.CHANGES_TOPIC === '') raw.CHANGES_TOPIC = '';
  // Kafka's own spelling (SCRAM-SHA-512, PLAIN) is as welcome as kafkajs's.
  if (typeof raw.KAFKA_SASL_MECHANISM === 'string') raw.KAFKA_SASL_MECHANISM = raw.KAFKA_SASL_MECHANISM.toLowerCase();
  fromEnvironmentStrings(configSchema, raw);
  const validate = ajv.compile(configSchema);
  if (!validate(raw)) {
    const problems = (validate.errors ?? []).map((e) => {
      const name = e.instancePath.replace(/^\//, '') || (e.params as { missingProperty?: string }).missingProperty;
      return `${name}: ${e.message}`;
    });
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  const keys = ['JWT_SECRET', 'JWT_PUBLIC_KEY', 'JWT_JWKS_URL'].filter((k) => raw[k] !== undefined);
  const lms = ['LMS_JWT_ISSUERS', 'LMS_JWT_PUBLIC_SIGNING_JWK_SET'].filter((k) => raw[k] !== undefined);
  if (keys.length > 1) {
    throw new ConfigError(`Invalid configuration: set at most one of JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL (${keys.join(', ')} are set)`);
  }
  if (lms.length === 1) {
    const missing = lms[0] === 'LMS_JWT_ISSUERS' ? 'LMS_JWT_PUBLIC_SIGNING_JWK_SET' : 'LMS_JWT_ISSUERS';
    throw new ConfigError(`Invalid configuration: ${missing} is not set but ${lms[0]} is (the LMS's tokens need both)`);
  }
  const orphans = ['JWT_ALGORITHM', 'JWT_ISSUER', 'JWT_AUDIENCE'].filter((k) => raw[k] !== undefined);
  if (keys.length === 0 && orphans.length > 0) {
    throw new ConfigError(
      `Invalid configuration: ${orphans.join(', ')} applies to the service's keys, and none of JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL is set`,
    );
  }
  // Two trust paths, either alone (docs/api.md); with neither, no request could ever be authenticated.
  if (keys.length === 0 && lms.length === 0) {
    throw new ConfigError(
      "Invalid configuration: no trust path: set one of JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL (the service's keys), " +
        "or LMS_JWT_ISSUERS and LMS_JWT_PUBLIC_SIGNING_JWK_SET (the LMS's), or both",
    );
  }
  // ajv applied the defaults to `raw` in place.
  const config = raw as unknown as RawConfig;
  checkMongoUrl(config.MONGO_URL);
  checkKafkaBrokers(config.KAFKA_BROKERS);
  if (config.JWT_JWKS_URL !== undefined) checkHttpUrl('JWT_JWKS_URL', config.JWT_JWKS_URL);
  if (config.SCHEMA_REGISTRY_URL !== undefined) checkHttpUrl('SCHEMA_REGISTRY_URL', config.SCHEMA_REGISTRY_URL);
  const list = (s: string) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
  const result: Config = Object.freeze({
    ...config,
    // A PEM in an environment variable often arrives with its newlines escaped.
    JWT_PUBLIC_KEY: config.JWT_PUBLIC_KEY?.replace(/\\n/g, '\n'),
    KAFKA_BROKERS: list(config.KAFKA_BROKERS),
    KAFKA_TOPICS: list(config.KAFKA_TOPICS),
    LMS_JWT_ISSUERS: config.LMS_JWT_ISSUERS === undefined ? undefined : asConfigError(() => parseLmsIssuers(config.LMS_JWT_ISSUERS!)),
    LMS_JWT_PUBLIC_SIGNING_JWK_SET:
      config.LMS_JWT_PUBLIC_SIGNING_JWK_SET === undefined ? undefined : asConfigError(() => parseLmsKeySet(config.LMS_JWT_PUBLIC_SIGNING_JWK_SET!)),
    LMS_OAUTH: asConfigError(() => parseLmsOauth({ ...config, hasLmsTrustPath: lms.length === 2 })),
  });
  if (result.JWT_ISSUER !== undefined && result.LMS_JWT_ISSUERS?.some((i) => i.ISSUER === result.JWT_ISSUER)) {
    // Tokens go to a trust path by issuer (src/http/auth.ts): one issuer cannot name both.
    throw new ConfigError('Invalid configuration: JWT_ISSUER is also an issuer of LMS_JWT_ISSUERS; the two trust paths need different issuers');
  }
  jwtAlgorithm(result); // refuses a key and algorithm that do not go together
  try {
    registryClientSettings(result); // reads and checks the files now, as Kafka's below
  } catch (err) {
    if (err instanceof RegistrySettingError) throw new ConfigError(`Invalid configuration: ${err.message}`);
    throw err;
  }
  try {
    kafkaSecurityOptions(result); // reads and checks the files now: a bad one stops start-up, not the first connection
  } catch (err) {
    if (err instanceof KafkaSettingError) throw new ConfigError(`Invalid configuration: ${err.message}`);
    throw err;
  }
  checkExtraCaCerts(env.NODE_EXTRA_CA_CERTS);
  checkTopicNames(result);
  return result;
}

/** Kafka refuses a topic name longer than 249 characters: a dead-letter topic's name is the longest one made here. */
function checkTopicNames(config: Pick<Config, 'KAFKA_TOPICS' | 'KAFKA_DLQ_PREFIX'>): void {
  for (const topic of config.KAFKA_TOPICS) {
    const dlq = dlqTopic(topic, config.KAFKA_DLQ_PREFIX);
    if (dlq.length > 249)
      throw new ConfigError(
        `Invalid configuration: KAFKA_DLQ_PREFIX: the dead-letter topic of ${topic} would be ${dlq.length} characters long (Kafka allows 249)`,
      );
  }
}

function asConfigError<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof LmsSettingError || err instanceof LmsOauthSettingError) throw new ConfigError(err.message);
    throw err;
  }
}

/**
 * The schema's patterns only look at a prefix; each URL is parsed here as the code that will use
 * it parses it, so a value it would refuse stops start-up naming the setting, not with a stack
 * trace at the first connection. No message repeats a whole URL: it may carry a password.
 */
function checkMongoUrl(url: string): void {
  let client: MongoClient;
  try {
    // The driver parses the whole string and its options in the constructor, without connecting.
    // Alone, not beside the service's own options, which would hide a bad value of the same name.
    client = new MongoClient(url);
  } catch (err) {
    throw new ConfigError(`Invalid configuration: MONGO_URL: ${(err as Error).message}`);
  }
  // The driver reads its TLS files only when it connects: an unreadable one would be retried forever.
  for (const option of ['tlsCAFile', 'tlsCertificateKeyFile'] as const) {
    const file = client.options[option];
    if (typeof file !== 'string') continue;
    try {
      readFileSync(file);
    } catch (err) {
      throw new ConfigError(
        `Invalid configuration: MONGO_URL: ${option} ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      );
    }
  }
}

/**
 * Node reads NODE_EXTRA_CA_CERTS (the CA bundle the schema registry client and the JWKS fetch
 * trust beside the system's) once at start, and only warns when it cannot: here that stops start-up.
 */
function checkExtraCaCerts(file: string | undefined): void {
  if (file === undefined || file === '') return;
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`Invalid configuration: NODE_EXTRA_CA_CERTS: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new ConfigError(`Invalid configuration: NODE_EXTRA_CA_CERTS: ${file} holds no PEM certificate`);
}

/** kafkajs splits each broker on ':' into a host and a port number, and checks neither. */
function checkKafkaBrokers(brokers: string): void {
  for (const broker of brokers.split(',')) {
    const [host, port, ...rest] = broker.trim().split(':');
    const portNumber = Number(port);
    const hostOk = host !== undefined && /^[A-Za-z0-9_]([A-Za-z0-9_.-]{0,251}[A-Za-z0-9_])?$/.test(host);
    if (!hostOk || rest.length > 0 || !/^\d{1,5}$/.test(port ?? '') || portNumber < 1 || portNumber > 65535) {
      throw new ConfigError(`Invalid configuration: KAFKA_BROKERS: "${broker}" is not host:port (a host name or IPv4 address, a port from 1 to 65535)`);
    }
  }
}

/** An http(s) URL as `fetch` reads it (jose's key set and the registry client fetch theirs). */
function checkHttpUrl(name: string, value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`Invalid configuration: ${name}: not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`Invalid configuration: ${name}: must be an http or https URL`);
}

/**
 * The one algorithm tokens must be signed with (docs/api.md: any other is refused):
 * HS256 with `JWT_SECRET`; with `JWT_PUBLIC_KEY`, the key's (RS256 for RSA, ES256 for an EC
 * P-256 key); with `JWT_JWKS_URL`, `JWT_ALGORITHM` (default RS256). `JWT_ALGORITHM` may also
 * confirm a public key's algorithm; a contradiction is a configuration error.
 */
export function jwtAlgorithm(config: Pick<Config, 'JWT_SECRET' | 'JWT_PUBLIC_KEY' | 'JWT_JWKS_URL' | 'JWT_ALGORITHM'>) {
  if (config.JWT_SECRET !== undefined) {
    if (config.JWT_ALGORITHM) throw new ConfigError('Invalid configuration: JWT_ALGORITHM applies to JWT_PUBLIC_KEY or JWT_JWKS_URL, not JWT_SECRET (HS256)');
    return 'HS256' as const;
  }
  if (config.JWT_PUBLIC_KEY !== undefined) {
    let key;
    try {
      key = createPublicKey(config.JWT_PUBLIC_KEY);
    } catch (err) {
      throw new ConfigError(`Invalid configuration: JWT_PUBLIC_KEY: not a PEM public key (${(err as Error).message})`);
    }
    let algorithm: 'RS256' | 'ES256';
    if (key.asymmetricKeyType === 'rsa') algorithm = 'RS256';
    else if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') algorithm = 'ES256';
    else throw new ConfigError('Invalid configuration: JWT_PUBLIC_KEY: must be an RSA key (RS256) or an EC P-256 key (ES256)');
    if (config.JWT_ALGORITHM && config.JWT_ALGORITHM !== algorithm) {
      throw new ConfigError(`Invalid configuration: JWT_ALGORITHM is ${config.JWT_ALGORITHM} but JWT_PUBLIC_KEY is a ${algorithm} key`);
    }
    return algorithm;
  }
  return config.JWT_ALGORITHM ?? ('RS256' as const);
}

/** What the `cag` command line reads: the database and the log level, nothing of JWT or Kafka. */
export const cliConfigSchema = {
  type: 'object',
  properties: {
    MONGO_URL: configSchema.properties.MONGO_URL,
    MONGO_DB: configSchema.properties.MONGO_DB,
    LOG_LEVEL: configSchema.properties.LOG_LEVEL,
    /** How long `cag upgrade` waits for a database that does not answer yet (a fresh install); 0: it does not wait. */
    CAG_UPGRADE_WAIT_SECONDS: { type: 'integer', minimum: 0, maximum: 3600, default: 120 },
    EVENT_HISTORY_DAYS: configSchema.properties.EVENT_HISTORY_DAYS,
    EVENT_HISTORY_ENTRIES: configSchema.properties.EVENT_HISTORY_ENTRIES,
  },
  additionalProperties: false,
  required: ['MONGO_URL', 'MONGO_DB', 'LOG_LEVEL', 'CAG_UPGRADE_WAIT_SECONDS', 'EVENT_HISTORY_DAYS', 'EVENT_HISTORY_ENTRIES'],
} as const;

export type CliConfig = Readonly<FromSchema<typeof cliConfigSchema>>;

/**
 * The service's own rules (same property schemas, same defaults) for the subset the command line
 * needs: a backfill or an export on an operator's shell must not require the JWT key or brokers.
 */
export function loadCliConfig(env: NodeJS.ProcessEnv = process.env): CliConfig {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(cliConfigSchema.properties)) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  fromEnvironmentStrings(cliConfigSchema, raw);
  const validate = ajv.compile(cliConfigSchema);
  if (!validate(raw)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath.replace(/^\//, '')}: ${e.message}`);
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  checkMongoUrl(raw.MONGO_URL as string);
  return Object.freeze(raw as unknown as CliConfig);
}

const KAFKA_CLI_KEYS = [
  'KAFKA_BROKERS',
  'KAFKA_SSL',
  'KAFKA_SSL_CA_FILE',
  'KAFKA_SSL_CERT_FILE',
  'KAFKA_SSL_KEY_FILE',
  'KAFKA_SASL_MECHANISM',
  'KAFKA_SASL_USERNAME',
  'KAFKA_SASL_PASSWORD',
  'KAFKA_SASL_PASSWORD_FILE',
  'KAFKA_SASL_OAUTHBEARER_TOKEN_FILE',
  'KAFKA_SASL_AWS_REGION',
  'KAFKA_GROUP_ID',
  'KAFKA_TOPICS',
  'KAFKA_DLQ_PREFIX',
  'CHANGES_TOPIC',
  'LOG_LEVEL',
] as const;

/** What `cag topics` reads: the service's Kafka settings (same schemas, defaults and checks), nothing else. */
export const kafkaCliConfigSchema = {
  type: 'object',
  properties: Object.fromEntries(KAFKA_CLI_KEYS.map((k) => [k, configSchema.properties[k]])) as Pick<
    typeof configSchema.properties,
    (typeof KAFKA_CLI_KEYS)[number]
  >,
  additionalProperties: false,
  required: ['KAFKA_BROKERS', 'KAFKA_SSL', 'KAFKA_GROUP_ID', 'KAFKA_TOPICS', 'KAFKA_DLQ_PREFIX', 'CHANGES_TOPIC', 'LOG_LEVEL'],
} as const;

export type KafkaCliConfig = Pick<Config, (typeof KAFKA_CLI_KEYS)[number]>;

/** The service's Kafka settings as it reads them, for `cag topics` on an operator's shell or in a Job. */
export function loadKafkaCliConfig(env: NodeJS.ProcessEnv = process.env): KafkaCliConfig {
  const raw: Record<string, unknown> = {};
  for (const key of KAFKA_CLI_KEYS) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  if (env.CHANGES_TOPIC === '') raw.CHANGES_TOPIC = '';
  if (typeof raw.KAFKA_SASL_MECHANISM === 'string') raw.KAFKA_SASL_MECHANISM = raw.KAFKA_SASL_MECHANISM.toLowerCase();
  fromEnvironmentStrings(kafkaCliConfigSchema, raw);
  const validate = ajv.compile(kafkaCliConfigSchema);
  if (!validate(raw)) {
    const problems = (validate.errors ?? []).map(
      (e) => `${e.instancePath.replace(/^\//, '') || (e.params as { missingProperty?: string }).missingProperty}: ${e.message}`,
    );
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  checkKafkaBrokers(raw.KAFKA_BROKERS as string);
  const list = (s: string) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
  const config = Object.freeze({
    ...(raw as object),
    KAFKA_BROKERS: list(raw.KAFKA_BROKERS as string),
    KAFKA_TOPICS: list(raw.KAFKA_TOPICS as string),
  }) as unknown as KafkaCliConfig;
  try {
    kafkaSecurityOptions(config);
  } catch (err) {
    if (err instanceof KafkaSettingError) throw new ConfigError(`Invalid configuration: ${err.message}`);
    throw err;
  }
  checkTopicNames(config);
  return config;
}
