import type { Middleware } from 'koa';
import { runInChangeContext } from '../db/change-context';
import type { Principal } from './auth';

/**
 * Admin requests: every write they make is the administrator's (the token's `user_id` and role),
 * carries the request id, and is audited. Set here, read by src/db: the domain never sees it.
 */
export const attributeChanges: Middleware = function attributeChangesToAdmin(ctx, next) {
  const principal: Principal = ctx.state.principal;
  return runInChangeContext(
    {
      cause: 'admin',
      actor: { type: 'user', user_id: principal.userId, role: principal.isStaff ? 'staff' : 'site_admin' },
      requestId: ctx.state.requestId ?? null,
      audit: true,
    },
    next,
  );
};
