import type { Feature } from '../../http/feature';
import { operations } from '../../http/openapi';
import { registerAuditLogRoutes } from './routes';
import { auditListQuerySchema, auditRecordSchema } from './schema';

const tags = ['audit-log'];

export const auditLogFeature: Feature = {
  register: registerAuditLogRoutes,
  openapi: {
    '/audit-log/': {
      get: {
        ...operations.list(tags, 'listAuditLog', auditRecordSchema, auditListQuerySchema),
        description:
          'Every change made through the admin API or the `cag` program to groups, memberships, membership rules, ' +
          'course links, public courses and the site configuration: one record per record changed, newest first. ' +
          'A refused request leaves none. Records expire after AUDIT_RETENTION_DAYS (default 365). ' +
          'Changes by LMS events are not audited (they are in the change events).',
      },
    },
  },
};
