/** The REST API's shapes the console reads (docs/api.md). */

export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}
export interface GroupRef {
  id: number;
  name: string;
}
export interface Group extends GroupRef {
  description: string;
}
export interface Course {
  id: string;
  name: string;
  public_status: { is_public: boolean; id?: number };
  group_links: { id: number; group: GroupRef }[];
}
export interface User {
  id: number;
  username: string;
  name: string;
  email: string;
  membership: { id: number; group: GroupRef } | null;
}
export interface Membership {
  id: number;
  user: { id: number; username: string; email: string };
  group: GroupRef;
}
export interface Rule {
  id: number;
  name: string;
  domain: string;
  group: GroupRef;
}
export interface SiteConfiguration {
  ENABLE_COURSE_ACCESS_GROUPS: boolean;
}
export interface Decision {
  allowed: boolean;
  reason: string;
}
export interface PublicRecord {
  id: number;
  course: { id: string; name: string };
}
