import { SignJWT } from 'jose';
import { TEST_JWT_SECRET } from './stack';

export interface Claims {
  user_id?: unknown;
  org?: string;
  administrator?: boolean;
  roles?: string[];
  [claim: string]: unknown;
}

/** An HS256 token signed with the test secret, valid for an hour unless `exp` says otherwise. */
export async function token(claims: Claims, opts: { secret?: string; exp?: number | string } = {}): Promise<string> {
  const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setIssuedAt();
  jwt.setExpirationTime(opts.exp ?? '1h');
  return jwt.sign(new TextEncoder().encode(opts.secret ?? TEST_JWT_SECRET));
}

export const staffToken = (userId = 1) => token({ user_id: userId, administrator: true });
export const siteAdminToken = (org: string, userId = 2) => token({ user_id: userId, org, roles: ['site_admin'] });
export const serviceToken = (userId = 3) => token({ user_id: userId, roles: ['service'] });
export const learnerToken = (org: string, userId = 4) => token({ user_id: userId, org });
