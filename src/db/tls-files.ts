import { createSecureContext, type SecureContext } from 'node:tls';
import type { MongoClientOptions } from 'mongodb';
import { watchedFile } from '../watched-file';

/**
 * The driver reads `tlsCAFile` and `tlsCertificateKeyFile` once, when the client first connects,
 * and every later connection of its pools uses that copy: a certificate renewed by cert-manager
 * would be used only after a restart, and once the old one expired every reconnection would fail.
 * Here the driver gets a `secureContext` (one of the TLS options it hands to `tls.connect`, which
 * then ignores `ca`, `cert` and `key`) whose native context is made from the files as they are
 * at each new connection: a file that changed is read again, and the connections opened after
 * it use it. Null when the URL names neither file.
 */
export function refreshingSecureContext(
  options: Pick<MongoClientOptions, 'tlsCAFile' | 'tlsCertificateKeyFile' | 'tlsCRLFile' | 'passphrase'>,
): SecureContext | null {
  const { tlsCAFile, tlsCertificateKeyFile, tlsCRLFile, passphrase } = options;
  if (typeof tlsCAFile !== 'string' && typeof tlsCertificateKeyFile !== 'string') return null;
  const ca = typeof tlsCAFile === 'string' ? watchedFile(tlsCAFile) : null;
  const bundle = typeof tlsCertificateKeyFile === 'string' ? watchedFile(tlsCertificateKeyFile) : null;
  const crl = typeof tlsCRLFile === 'string' ? watchedFile(tlsCRLFile) : null;
  let made: { from: string; context: SecureContext } | null = null;
  const current = (): SecureContext => {
    const files = { ca: ca?.(), bundle: bundle?.(), crl: crl?.() };
    const from = JSON.stringify(files);
    if (made?.from !== from) {
      const context = createSecureContext({
        ...(files.ca !== undefined ? { ca: files.ca } : {}),
        // One PEM file holding the certificate and its key, as the driver reads it.
        ...(files.bundle !== undefined ? { cert: files.bundle, key: files.bundle, passphrase: typeof passphrase === 'string' ? passphrase : undefined } : {}),
        ...(files.crl !== undefined ? { crl: files.crl } : {}),
      });
      made = { from, context };
    }
    return made.context;
  };
  current(); // a file that cannot be read or parsed fails here, at start-up, not at the first connection
  // Node's TLS reads only `.context` of the object it is given (lib/_tls_wrap.js), at each connection.
  return {
    get context() {
      return current().context;
    },
  } as SecureContext;
}
