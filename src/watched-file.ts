import { readFileSync, statSync } from 'node:fs';

/**
 * A file's content, read again whenever the file changed: a Kubernetes Secret or cert-manager's
 * renewal swaps the mounted file (a new inode behind the same path), an operator rewrites it (a new
 * mtime or size). Each call costs one stat; the content is read only after a change. Throws what
 * `readFileSync` throws (the caller names the setting).
 */
export function watchedFile(path: string): () => string {
  let seen: { key: string; content: string } | null = null;
  return () => {
    const s = statSync(path);
    const key = `${s.ino}:${s.mtimeMs}:${s.size}`;
    if (seen?.key !== key) seen = { key, content: readFileSync(path, 'utf8') };
    return seen.content;
  };
}
