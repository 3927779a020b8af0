import { createPrivateKey, X509Certificate } from 'node:crypto';
import { watchedFile } from './watched-file';

/** The settings of the schema registry client (src/config.ts validates them with `registryClientSettings`). */
export interface RegistrySettings {
  readonly SCHEMA_REGISTRY_URL?: string;
  readonly SCHEMA_REGISTRY_USERNAME?: string;
  readonly SCHEMA_REGISTRY_PASSWORD?: string;
  readonly SCHEMA_REGISTRY_PASSWORD_FILE?: string;
  readonly SCHEMA_REGISTRY_CA_FILE?: string;
  readonly SCHEMA_REGISTRY_CERT_FILE?: string;
  readonly SCHEMA_REGISTRY_KEY_FILE?: string;
}

/** A registry setting that cannot be used as it is: the message names it. */
export class RegistrySettingError extends Error {
  override readonly name = 'RegistrySettingError';
}

export interface RegistryTls {
  ca?: string;
  cert?: string;
  key?: string;
}

/** What consumers/avro.ts's client is made from: the URL, and functions that read the secrets as they are now. */
export interface RegistryClientSettings {
  url: string;
  username?: string;
  password?: () => string;
  tls?: () => RegistryTls;
}

function reader(name: string, file: string): () => string {
  const read = watchedFile(file);
  return () => {
    try {
      return read();
    } catch (err) {
      throw new RegistrySettingError(`${name}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  };
}

/**
 * The registry client's settings, the same TLS and secret-file settings as Kafka's
 * (docs/kafka-security.md): a private CA, a client certificate and key, the password or a file
 * holding it. Files are read again when they change (at the next request), so a renewed
 * certificate or a rotated password needs no restart. Called once at start-up to check them:
 * throws a `RegistrySettingError` naming the setting for a file that cannot be read or parsed,
 * a certificate without its key, TLS files or basic auth with an `http://` URL (the password
 * would cross the network in clear), or a user without a password. Null without a URL.
 */
export function registryClientSettings(settings: RegistrySettings): RegistryClientSettings | null {
  const url = settings.SCHEMA_REGISTRY_URL;
  const given = (Object.keys(settings) as (keyof RegistrySettings)[]).filter((k) => k.startsWith('SCHEMA_REGISTRY_') && settings[k] !== undefined);
  if (url === undefined) {
    if (given.length > 0) throw new RegistrySettingError(`${given.join(', ')}: set, but SCHEMA_REGISTRY_URL is not`);
    return null;
  }
  const https = url.startsWith('https://');
  const client: RegistryClientSettings = { url };

  const tlsFiles = (['SCHEMA_REGISTRY_CA_FILE', 'SCHEMA_REGISTRY_CERT_FILE', 'SCHEMA_REGISTRY_KEY_FILE'] as const).filter((k) => settings[k] !== undefined);
  if (tlsFiles.length > 0 && !https) throw new RegistrySettingError(`${tlsFiles.join(', ')}: set, but SCHEMA_REGISTRY_URL is not an https:// URL`);
  if ((settings.SCHEMA_REGISTRY_CERT_FILE === undefined) !== (settings.SCHEMA_REGISTRY_KEY_FILE === undefined)) {
    throw new RegistrySettingError(
      settings.SCHEMA_REGISTRY_CERT_FILE === undefined
        ? 'SCHEMA_REGISTRY_KEY_FILE: set without SCHEMA_REGISTRY_CERT_FILE (mutual TLS needs both)'
        : 'SCHEMA_REGISTRY_CERT_FILE: set without SCHEMA_REGISTRY_KEY_FILE (mutual TLS needs both)',
    );
  }
  if (tlsFiles.length > 0) {
    const ca = settings.SCHEMA_REGISTRY_CA_FILE && reader('SCHEMA_REGISTRY_CA_FILE', settings.SCHEMA_REGISTRY_CA_FILE);
    const cert = settings.SCHEMA_REGISTRY_CERT_FILE && reader('SCHEMA_REGISTRY_CERT_FILE', settings.SCHEMA_REGISTRY_CERT_FILE);
    const key = settings.SCHEMA_REGISTRY_KEY_FILE && reader('SCHEMA_REGISTRY_KEY_FILE', settings.SCHEMA_REGISTRY_KEY_FILE);
    client.tls = () => ({ ...(ca ? { ca: ca() } : {}), ...(cert && key ? { cert: cert(), key: key() } : {}) });
    // Checked now: a bad file stops start-up, not the first message.
    const now = client.tls();
    if (now.ca !== undefined && !parses(() => new X509Certificate(now.ca!))) {
      throw new RegistrySettingError(`SCHEMA_REGISTRY_CA_FILE: ${settings.SCHEMA_REGISTRY_CA_FILE} holds no PEM certificate`);
    }
    if (now.cert !== undefined) {
      let certificate: X509Certificate;
      try {
        certificate = new X509Certificate(now.cert);
      } catch {
        throw new RegistrySettingError(`SCHEMA_REGISTRY_CERT_FILE: ${settings.SCHEMA_REGISTRY_CERT_FILE} holds no PEM certificate`);
      }
      let privateKey: ReturnType<typeof createPrivateKey>;
      try {
        privateKey = createPrivateKey(now.key!);
      } catch {
        throw new RegistrySettingError(`SCHEMA_REGISTRY_KEY_FILE: ${settings.SCHEMA_REGISTRY_KEY_FILE} holds no unencrypted PEM private key`);
      }
      if (!certificate.checkPrivateKey(privateKey)) {
        throw new RegistrySettingError('SCHEMA_REGISTRY_KEY_FILE: not the private key of the certificate in SCHEMA_REGISTRY_CERT_FILE');
      }
    }
  }

  const passwords = (['SCHEMA_REGISTRY_PASSWORD', 'SCHEMA_REGISTRY_PASSWORD_FILE'] as const).filter((k) => settings[k] !== undefined);
  if (settings.SCHEMA_REGISTRY_USERNAME === undefined) {
    if (passwords.length > 0) throw new RegistrySettingError(`${passwords.join(', ')}: set without SCHEMA_REGISTRY_USERNAME (basic auth needs both)`);
    return client;
  }
  if (passwords.length !== 1) {
    throw new RegistrySettingError(
      passwords.length === 0
        ? 'SCHEMA_REGISTRY_PASSWORD: required with SCHEMA_REGISTRY_USERNAME (or SCHEMA_REGISTRY_PASSWORD_FILE naming a file that holds it)'
        : 'SCHEMA_REGISTRY_PASSWORD and SCHEMA_REGISTRY_PASSWORD_FILE: set only one of the two',
    );
  }
  if (!https) {
    throw new RegistrySettingError(
      'SCHEMA_REGISTRY_USERNAME: basic auth over an http:// SCHEMA_REGISTRY_URL would send the password in clear: use the https:// URL of the registry',
    );
  }
  client.username = settings.SCHEMA_REGISTRY_USERNAME;
  if (settings.SCHEMA_REGISTRY_PASSWORD !== undefined) {
    const password = settings.SCHEMA_REGISTRY_PASSWORD;
    client.password = () => password;
  } else {
    const file = settings.SCHEMA_REGISTRY_PASSWORD_FILE!;
    const read = reader('SCHEMA_REGISTRY_PASSWORD_FILE', file);
    // A mounted secret file usually ends with a newline that is not part of the password.
    client.password = () => read().replace(/\r?\n$/, '');
    if (client.password() === '') throw new RegistrySettingError(`SCHEMA_REGISTRY_PASSWORD_FILE: ${file} is empty`);
  }
  return client;
}

function parses(make: () => unknown): boolean {
  try {
    make();
    return true;
  } catch {
    return false;
  }
}
