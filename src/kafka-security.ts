import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import type { SASLOptions } from 'kafkajs';

/** The settings this module reads (src/config.ts validates them with `kafkaSecurityOptions`). */
export interface KafkaSecuritySettings {
  readonly KAFKA_SSL: 'on' | 'off';
  readonly KAFKA_SSL_CA_FILE?: string;
  readonly KAFKA_SSL_CERT_FILE?: string;
  readonly KAFKA_SSL_KEY_FILE?: string;
  readonly KAFKA_SASL_MECHANISM?: 'plain' | 'scram-sha-256' | 'scram-sha-512' | 'oauthbearer' | 'aws-msk-iam';
  readonly KAFKA_SASL_USERNAME?: string;
  readonly KAFKA_SASL_PASSWORD?: string;
  readonly KAFKA_SASL_PASSWORD_FILE?: string;
  /** OAUTHBEARER: a file holding the token, read at each authentication (a sidecar or the platform renews it). */
  readonly KAFKA_SASL_OAUTHBEARER_TOKEN_FILE?: string;
  /** aws-msk-iam: the cluster's AWS region (the token is signed for it). */
  readonly KAFKA_SASL_AWS_REGION?: string;
}

/** A Kafka security setting that cannot be used as it is: the message names it. */
export class KafkaSettingError extends Error {
  override readonly name = 'KafkaSettingError';
}

export interface KafkaSecurityOptions {
  ssl?: ConnectionOptions | boolean;
  sasl?: SASLOptions;
}

function readSetting(name: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new KafkaSettingError(`${name}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

/**
 * The kafkajs `ssl` and `sasl` options of every Kafka client of the process (consumer, change
 * relay, dead-letter producer, probe), read from the files the settings name. Throws a
 * `KafkaSettingError` naming the setting for a file that cannot be read or parsed, a certificate
 * without its key, or SASL without its credentials; so called once at start-up to validate.
 */
export function kafkaSecurityOptions(settings: KafkaSecuritySettings): KafkaSecurityOptions {
  const options: KafkaSecurityOptions = {};
  const tlsFiles = (['KAFKA_SSL_CA_FILE', 'KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE'] as const).filter((k) => settings[k] !== undefined);
  if (settings.KAFKA_SSL === 'off') {
    // A CA or client certificate given for a plaintext connection is a mistake, not a preference.
    if (tlsFiles.length > 0) throw new KafkaSettingError(`${tlsFiles.join(', ')}: set, but KAFKA_SSL is off (set KAFKA_SSL=on to use TLS)`);
  } else {
    const ssl: ConnectionOptions = {};
    if (settings.KAFKA_SSL_CA_FILE !== undefined) {
      const ca = readSetting('KAFKA_SSL_CA_FILE', settings.KAFKA_SSL_CA_FILE);
      try {
        new X509Certificate(ca);
      } catch {
        throw new KafkaSettingError(`KAFKA_SSL_CA_FILE: ${settings.KAFKA_SSL_CA_FILE} holds no PEM certificate`);
      }
      ssl.ca = [ca];
    }
    if ((settings.KAFKA_SSL_CERT_FILE === undefined) !== (settings.KAFKA_SSL_KEY_FILE === undefined)) {
      throw new KafkaSettingError(
        settings.KAFKA_SSL_CERT_FILE === undefined
          ? 'KAFKA_SSL_KEY_FILE: set without KAFKA_SSL_CERT_FILE (mutual TLS needs both)'
          : 'KAFKA_SSL_CERT_FILE: set without KAFKA_SSL_KEY_FILE (mutual TLS needs both)',
      );
    }
    if (settings.KAFKA_SSL_CERT_FILE !== undefined && settings.KAFKA_SSL_KEY_FILE !== undefined) {
      const cert = readSetting('KAFKA_SSL_CERT_FILE', settings.KAFKA_SSL_CERT_FILE);
      const key = readSetting('KAFKA_SSL_KEY_FILE', settings.KAFKA_SSL_KEY_FILE);
      let certificate: X509Certificate;
      try {
        certificate = new X509Certificate(cert);
      } catch {
        throw new KafkaSettingError(`KAFKA_SSL_CERT_FILE: ${settings.KAFKA_SSL_CERT_FILE} holds no PEM certificate`);
      }
      let privateKey: ReturnType<typeof createPrivateKey>;
      try {
        privateKey = createPrivateKey(key);
      } catch {
        throw new KafkaSettingError(`KAFKA_SSL_KEY_FILE: ${settings.KAFKA_SSL_KEY_FILE} holds no unencrypted PEM private key`);
      }
      if (!certificate.checkPrivateKey(privateKey)) {
        throw new KafkaSettingError('KAFKA_SSL_KEY_FILE: not the private key of the certificate in KAFKA_SSL_CERT_FILE');
      }
      ssl.cert = cert;
      ssl.key = key;
    }
    // No CA file: the system's CAs (and NODE_EXTRA_CA_CERTS), as a managed Kafka's public certificate needs.
    options.ssl = Object.keys(ssl).length > 0 ? ssl : true;
  }

  const mechanism = settings.KAFKA_SASL_MECHANISM;
  const credentials = (['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD', 'KAFKA_SASL_PASSWORD_FILE'] as const).filter((k) => settings[k] !== undefined);
  if (mechanism === undefined) {
    const given = settings.KAFKA_SASL_OAUTHBEARER_TOKEN_FILE === undefined ? credentials : [...credentials, 'KAFKA_SASL_OAUTHBEARER_TOKEN_FILE'];
    if (given.length > 0)
      throw new KafkaSettingError(`${given.join(', ')}: set, but KAFKA_SASL_MECHANISM is not (plain, scram-sha-256, scram-sha-512 or oauthbearer)`);
    return options;
  }
  if (mechanism !== 'aws-msk-iam' && settings.KAFKA_SASL_AWS_REGION !== undefined) {
    throw new KafkaSettingError(`KAFKA_SASL_AWS_REGION: set, but KAFKA_SASL_MECHANISM is ${mechanism} (the region is aws-msk-iam's)`);
  }
  if (mechanism === 'oauthbearer') {
    options.sasl = oauthBearer(settings, credentials);
    return options;
  }
  if (settings.KAFKA_SASL_OAUTHBEARER_TOKEN_FILE !== undefined) {
    throw new KafkaSettingError(`KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: set, but KAFKA_SASL_MECHANISM is ${mechanism} (oauthbearer takes a token)`);
  }
  if (mechanism === 'aws-msk-iam') {
    options.sasl = mskIam(settings, credentials);
    return options;
  }
  if (settings.KAFKA_SASL_USERNAME === undefined) throw new KafkaSettingError(`KAFKA_SASL_USERNAME: required with KAFKA_SASL_MECHANISM=${mechanism}`);
  if ((settings.KAFKA_SASL_PASSWORD === undefined) === (settings.KAFKA_SASL_PASSWORD_FILE === undefined)) {
    throw new KafkaSettingError(
      settings.KAFKA_SASL_PASSWORD === undefined
        ? `KAFKA_SASL_PASSWORD: required with KAFKA_SASL_MECHANISM=${mechanism} (or KAFKA_SASL_PASSWORD_FILE naming a file that holds it)`
        : 'KAFKA_SASL_PASSWORD and KAFKA_SASL_PASSWORD_FILE: set only one of the two',
    );
  }
  let password = settings.KAFKA_SASL_PASSWORD;
  if (settings.KAFKA_SASL_PASSWORD_FILE !== undefined) {
    // A mounted secret file usually ends with a newline that is not part of the password.
    password = readSetting('KAFKA_SASL_PASSWORD_FILE', settings.KAFKA_SASL_PASSWORD_FILE).replace(/\r?\n$/, '');
    if (password === '') throw new KafkaSettingError(`KAFKA_SASL_PASSWORD_FILE: ${settings.KAFKA_SASL_PASSWORD_FILE} is empty`);
  }
  options.sasl = { mechanism, username: settings.KAFKA_SASL_USERNAME, password: password! } as SASLOptions;
  return options;
}

/**
 * OAUTHBEARER with a token kept in a file by whatever renews it (a sidecar fetching it from the
 * identity provider, a projected service-account token, a job): kafkajs asks for a token at each
 * authentication (each new broker connection), and gets the file as it is then. The token is
 * never logged. The file is read now too, so a missing or empty one stops start-up.
 */
function oauthBearer(settings: KafkaSecuritySettings, credentials: readonly string[]): SASLOptions {
  if (credentials.length > 0) throw new KafkaSettingError(`${credentials.join(', ')}: not used with KAFKA_SASL_MECHANISM=oauthbearer (it takes a token)`);
  const file = settings.KAFKA_SASL_OAUTHBEARER_TOKEN_FILE;
  if (file === undefined) {
    throw new KafkaSettingError(
      'KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: required with KAFKA_SASL_MECHANISM=oauthbearer (a file holding the token, kept fresh by its issuer)',
    );
  }
  const token = () => {
    const value = readSetting('KAFKA_SASL_OAUTHBEARER_TOKEN_FILE', file).trim();
    if (value === '') throw new KafkaSettingError(`KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: ${file} is empty`);
    return value;
  };
  token();
  return { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: token() }) };
}

/**
 * Amazon MSK's IAM access control: OAUTHBEARER whose token is a request signed with the pod's AWS
 * credentials (IRSA, EKS Pod Identity, an instance role, AWS_* variables: the AWS SDK's default
 * chain), made by AWS's own signer (aws-msk-iam-sasl-signer-js) at each authentication. The
 * library is loaded only when this mechanism is used.
 */
function mskIam(settings: KafkaSecuritySettings, credentials: readonly string[]): SASLOptions {
  if (credentials.length > 0)
    throw new KafkaSettingError(`${credentials.join(', ')}: not used with KAFKA_SASL_MECHANISM=aws-msk-iam (it signs with the pod's AWS credentials)`);
  const region = settings.KAFKA_SASL_AWS_REGION;
  if (region === undefined)
    throw new KafkaSettingError("KAFKA_SASL_AWS_REGION: required with KAFKA_SASL_MECHANISM=aws-msk-iam (the cluster's region, e.g. eu-west-1)");
  if (settings.KAFKA_SSL !== 'on') throw new KafkaSettingError('KAFKA_SSL: MSK takes IAM only over TLS (port 9098): set KAFKA_SSL=on');
  return {
    mechanism: 'oauthbearer',
    oauthBearerProvider: async () => {
      const { generateAuthToken } = await import('aws-msk-iam-sasl-signer-js');
      const { token } = await generateAuthToken({ region });
      return { value: token };
    },
  };
}

const UNTRUSTED = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
]);

/** The errors kafkajs wraps, outermost first (`cause` and kafkajs's `originalError`). */
function chain(err: unknown): Error[] {
  const errors: Error[] = [];
  for (let e = err, depth = 0; e instanceof Error && depth < 10; depth++) {
    errors.push(e);
    e = (e as { originalError?: unknown }).originalError ?? e.cause;
  }
  return errors;
}

/**
 * One line saying why the broker could not be reached, naming the setting to look at and the
 * broker: a refused password, an untrusted certificate, TLS against a plaintext listener or the
 * other way round. Never a credential: kafkajs's messages name the mechanism and the broker only.
 * `setting` is the setting to fix (null when nothing says the broker is not simply down): waiting
 * does not mend those, so they are logged once, not at every retry.
 */
export function describeKafkaFailure(
  err: unknown,
  settings: KafkaSecuritySettings & { readonly KAFKA_BROKERS: readonly string[] },
): { reason: string; setting: string | null } {
  const errors = chain(err);
  const broker = errors.map((e) => (e as { broker?: unknown }).broker).find((b) => typeof b === 'string') ?? settings.KAFKA_BROKERS.join(',');
  const codes = errors.map((e) => (e as { code?: unknown }).code).filter((c): c is string => typeof c === 'string');
  const messages = errors.map((e) => e.message);
  // One line: OpenSSL's messages end with a newline.
  const last = (messages[messages.length - 1] ?? 'unknown error').replace(/\s+/g, ' ').trim();
  const has = (re: RegExp) => messages.some((m) => re.test(m)) || codes.some((c) => re.test(c));
  if (errors.some((e) => e.name === 'KafkaJSSASLAuthenticationError') || has(/SASL .*authentication failed|Authentication failed/i)) {
    if (settings.KAFKA_SASL_MECHANISM === 'oauthbearer') {
      return {
        reason: `Kafka broker ${broker} refused the OAUTHBEARER token: check the token in KAFKA_SASL_OAUTHBEARER_TOKEN_FILE (expired? its issuer and audience?): ${last}`,
        setting: 'KAFKA_SASL_OAUTHBEARER_TOKEN_FILE',
      };
    }
    return {
      reason: `Kafka broker ${broker} refused the SASL credentials: check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD${settings.KAFKA_SASL_PASSWORD_FILE ? '_FILE' : ''} (mechanism ${settings.KAFKA_SASL_MECHANISM ?? 'none'}): ${last}`,
      setting: 'KAFKA_SASL_PASSWORD',
    };
  }
  // kafkajs takes any answer to its OAUTHBEARER token as success (it does not read the broker's
  // {"status":"invalid_token"}); the broker then closes the connection. Closed right after
  // authenticating, with the broker up (not ECONNREFUSED): the token.
  if (
    settings.KAFKA_SASL_MECHANISM === 'aws-msk-iam' &&
    !has(/ECONNREFUSED|ECONNRESET/) &&
    has(/No brokers in the broker pool|Closed connection|Connection closed|credentials/i)
  ) {
    return {
      reason: `Kafka broker ${broker} refused the IAM token or none could be signed: check the pod's AWS credentials (IRSA, Pod Identity), their kafka-cluster:Connect permission on the cluster and KAFKA_SASL_AWS_REGION: ${last}`,
      setting: 'KAFKA_SASL_AWS_REGION',
    };
  }
  if (
    settings.KAFKA_SASL_MECHANISM === 'oauthbearer' &&
    !has(/ECONNREFUSED|ECONNRESET/) &&
    has(/No brokers in the broker pool|Closed connection|Connection closed/i)
  ) {
    return {
      reason: `Kafka broker ${broker} closed the connection after the OAUTHBEARER token (most often a refused token: kafkajs does not read the broker's answer): check the token in KAFKA_SASL_OAUTHBEARER_TOKEN_FILE (expired? its issuer and audience?): ${last}`,
      setting: 'KAFKA_SASL_OAUTHBEARER_TOKEN_FILE',
    };
  }
  if (has(/Unsupported SASL mechanism|UNSUPPORTED_SASL_MECHANISM|ILLEGAL_SASL_STATE/)) {
    return {
      reason: `Kafka broker ${broker} does not accept KAFKA_SASL_MECHANISM=${settings.KAFKA_SASL_MECHANISM ?? '(none)'} on this listener: ${last}`,
      setting: 'KAFKA_SASL_MECHANISM',
    };
  }
  if (codes.some((c) => UNTRUSTED.has(c)) || has(/self[- ]signed certificate|unable to verify|certificate has expired|Hostname\/IP does not match/i)) {
    return {
      reason: `Kafka broker ${broker} presented a certificate this process does not trust: check KAFKA_SSL_CA_FILE${settings.KAFKA_SSL_CA_FILE ? '' : ' (not set: only the system CAs are trusted)'}: ${last}`,
      setting: 'KAFKA_SSL_CA_FILE',
    };
  }
  if (has(/CERTIFICATE_REQUIRED|certificate required|alert bad certificate|BAD_CERTIFICATE|unknown ca/i)) {
    return {
      reason: `Kafka broker ${broker} refused the client certificate: check KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE (mutual TLS): ${last}`,
      setting: 'KAFKA_SSL_CERT_FILE',
    };
  }
  // A reset alone (ECONNRESET) is the network's or a restarting broker's, never a setting: only
  // a handshake that never completed says TLS met a plaintext listener.
  if (settings.KAFKA_SSL === 'on' && has(/before secure TLS connection was established|wrong version number|packet length too long/i)) {
    return { reason: `Kafka broker ${broker} did not complete a TLS handshake: is it a plaintext listener? (KAFKA_SSL is on): ${last}`, setting: 'KAFKA_SSL' };
  }
  if (settings.KAFKA_SSL === 'off' && !has(/ECONNRESET/) && has(/Closed connection|Connection closed|timed out|Request .* timed out/i)) {
    return {
      reason: `Kafka broker ${broker} closed the connection or did not answer: if it is a TLS listener, set KAFKA_SSL=on (KAFKA_SSL is off): ${last}`,
      setting: 'KAFKA_SSL',
    };
  }
  if (settings.KAFKA_SASL_MECHANISM === undefined && !has(/ECONNRESET/) && has(/Closed connection|Connection closed|timed out/i)) {
    return {
      reason: `Kafka broker ${broker} closed the connection or did not answer: if its listener requires SASL, set KAFKA_SASL_MECHANISM: ${last}`,
      setting: 'KAFKA_SASL_MECHANISM',
    };
  }
  return { reason: `Kafka broker ${broker} not reachable (KAFKA_BROKERS): ${last}`, setting: null };
}

/**
 * One line saying why the consumer stopped (kafkajs's CRASH): a refusal by the broker's ACLs
 * names the resource and the permission it lacks; a refused connection is said as
 * describeKafkaFailure says it. Never a credential, nor the SASL user's name.
 */
export function describeConsumerCrash(
  err: unknown,
  settings: KafkaSecuritySettings & { readonly KAFKA_BROKERS: readonly string[]; readonly KAFKA_GROUP_ID: string },
): string {
  const errors = chain(err);
  const types = errors.map((e) => (e as { type?: unknown }).type);
  const who =
    settings.KAFKA_SASL_MECHANISM === 'oauthbearer'
      ? "the token's principal"
      : settings.KAFKA_SASL_MECHANISM
        ? "KAFKA_SASL_USERNAME's user"
        : "this service's principal";
  if (types.includes('GROUP_AUTHORIZATION_FAILED')) {
    return `Kafka refused the consumer group ${settings.KAFKA_GROUP_ID} (GROUP_AUTHORIZATION_FAILED): the broker's ACLs must allow READ on group ${settings.KAFKA_GROUP_ID} to ${who}`;
  }
  // kafkajs drops the broker's answer to FindCoordinator (Cluster.findGroupCoordinatorMetadata),
  // and retries the answers that pass by themselves: what is left is most often a refusal.
  if (errors.some((e) => e.name === 'KafkaJSGroupCoordinatorNotFound')) {
    return `Kafka gave no coordinator for the consumer group ${settings.KAFKA_GROUP_ID} (kafkajs does not say why; most often GROUP_AUTHORIZATION_FAILED): the broker's ACLs must allow READ on group ${settings.KAFKA_GROUP_ID} to ${who}`;
  }
  if (types.includes('TOPIC_AUTHORIZATION_FAILED')) {
    return `Kafka refused reading KAFKA_TOPICS (TOPIC_AUTHORIZATION_FAILED): the broker's ACLs must allow READ and DESCRIBE on each topic to ${who}`;
  }
  const described = describeKafkaFailure(err, settings);
  if (described.setting) return described.reason;
  const last = errors.at(-1)?.message.replace(/\s+/g, ' ').trim() ?? String(err);
  return `the consumer stopped: ${errors[0]?.name ?? 'Error'}: ${last}`;
}
