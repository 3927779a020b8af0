/**
 * The reference model (test/helpers/event-model.ts) against SPEC §5: apart from events of one
 * time, the outcome of a set of events does not depend on the order they arrive in. The
 * event-history test (test/integration/events-model.test.ts) holds the service to the model's
 * states for every order Kafka allows; this one holds the model to event time, in memory and so
 * over many more histories: each stretch of events between two admin writes is delivered in every
 * order its topics allow and in event time, and all must end in the same state.
 */
import fc from 'fast-check';
import { DEFAULT_ORG, encode, type History, historyArbitrary, isEvent, type Step } from '../helpers/event-history';
import { deliverInAnyOrder, EventModel, type ModelEvent, recordOf } from '../helpers/event-model';

const RUNS = Number(process.env.ORDERS_RUNS ?? 300);

/** The topic the LMS sends an event on, as the event-history test does: the record's lane. */
const laneOf = (e: ModelEvent) => (e.kind === 'activated' ? 'activated' : e.kind === 'catalog' || e.kind === 'courseDeleted' ? 'catalog' : 'lifecycle');

/** An admin write, on the model (`g`: the index of a group in the organization's list). */
function adminWrite(m: EventModel, step: Step): void {
  if (!('org' in step) || step.org === null || isEvent(step)) return;
  const { org } = step;
  const groups = m.groups(org);
  const group = 'g' in step && groups.length > 0 ? groups[step.g % groups.length]!.handle : null;
  const withGroup = (write: (g: number) => unknown) => group !== null && write(group);
  switch (step.do) {
    case 'flag':
      return void m.setFlag(org, step.on);
    case 'group':
      return void m.createGroup(org, 'g');
    case 'ungroup':
      return void withGroup((g) => m.deleteGroup(org, g));
    case 'rule':
      return void withGroup((g) => m.createRule(org, step.domain, g));
    case 'unrule':
      return void m.deleteRule(org, step.domain);
    case 'member':
      return void withGroup((g) => m.createMembership(org, step.user, g));
    case 'unmember':
      return void m.deleteMembership(org, step.user);
    case 'move':
      return void withGroup((g) => m.moveMembership(org, step.user, g));
    case 'link':
      return void withGroup((g) => m.link(org, step.course, g));
    case 'unlink':
      return void withGroup((g) => m.unlink(org, step.course, g));
    case 'public':
      return void (step.on ? m.makePublic(org, step.course) : m.makePrivate(org, step.course));
  }
}

/** What the API shows, in an order that does not depend on arrival. */
function view(m: EventModel, orgs: string[]): string {
  const sorted = <T>(xs: T[]) => xs.map((x) => JSON.stringify(x)).sort();
  return JSON.stringify(
    orgs.map((org) => {
      const v = m.view(org);
      return { ...v, rules: sorted(v.rules), memberships: sorted(v.memberships), links: sorted(v.links), publics: sorted(v.publics) };
    }),
  );
}

/** The stretches of `h` whose outcome depended on arrival order, but for a tie of one time (for each, its events). */
function orderDependentStretches(h: History): ModelEvent[][] {
  let models = [new EventModel(DEFAULT_ORG)];
  const sent: ModelEvent[] = [];
  let stretch: { event: ModelEvent; lane: string }[] = [];
  const found: ModelEvent[][] = [];
  const orgs = () => [...new Set([...h.orgs, ...models.flatMap((m) => m.orgs())])].sort();
  const catchUp = () => {
    if (stretch.length === 0) return;
    const ident = (e: ModelEvent) => `${e.source}|${e.id}`;
    // Among events of one time arrival decides (SPEC): a stretch with two such events whose order
    // Kafka may swap (one record's, on two topics) is not held to one outcome. One sent before the
    // stretch arrived before it, whatever the order within: no excuse (issue 38's seed 2911 case).
    const tie = stretch.some(({ event, lane }) =>
      stretch.some((o) => recordOf(o.event) === recordOf(event) && o.event.time === event.time && ident(o.event) !== ident(event) && o.lane !== lane),
    );
    const inTime = stretch.map((s, i) => ({ ...s, i })).sort((a, b) => a.event.time - b.event.time || a.i - b.i);
    const next: EventModel[] = [];
    let dependent = false;
    for (const start of models) {
      const timed = start.clone();
      for (const { event } of inTime) timed.deliver(event);
      const reached = deliverInAnyOrder([start], stretch);
      next.push(...reached);
      if (new Set([...reached, timed].map((m) => view(m, orgs()))).size > 1) dependent = true;
    }
    if (dependent && !tie) found.push(stretch.map((s) => s.event));
    models = next;
    stretch = [];
  };
  for (const step of h.steps) {
    if (isEvent(step)) {
      const { event } = encode(step, `ev-${sent.length + 1}`);
      sent.push(event);
      stretch.push({ event, lane: laneOf(event) });
    } else if (step.do === 'again') {
      const event = sent[sent.length - 1 - (step.back % Math.max(sent.length, 1))];
      if (event) stretch.push({ event, lane: laneOf(event) });
    } else if (step.do !== 'kill') {
      catchUp();
      for (const m of models) adminWrite(m, step);
    }
  }
  catchUp();
  return found;
}

test(`the model: over ${RUNS} random histories, arrival order never changes an outcome but among events of one time, and event time agrees`, () => {
  fc.assert(
    fc.property(historyArbitrary(40), (h) => {
      expect(orderDependentStretches(h)).toEqual([]);
    }),
    { numRuns: RUNS, seed: Number(process.env.ORDERS_SEED ?? 1) },
  );
});
