import { accountActivated } from './account-activated';
import { catalogInfoChanged } from './catalog-info-changed';
import { courseDeleted } from './course-deleted';
import type { EventHandler } from './handler';
import { loginCompleted } from './login-completed';
import { registrationCompleted } from './registration-completed';
import { userRetired } from './user-retired';
import { userUpdated } from './user-updated';

/** Every event type the service handles, by CloudEvents `type` (the topic does not matter). */
export const HANDLERS: ReadonlyMap<string, EventHandler> = new Map(
  [accountActivated, registrationCompleted, loginCompleted, userUpdated, userRetired, catalogInfoChanged, courseDeleted].map((h) => [h.type, h]),
);
