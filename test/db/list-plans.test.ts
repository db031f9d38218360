// A first page must not cost more because the list behind it is long. The real service answers the first
// page of each list inside a big organization (thousands of projects, members, invitations, tokens,
// models, among many other organizations' rows); every SELECT it sent for that request is then run again
// under EXPLAIN ANALYZE, and each plan must read about a page of rows: index scans that stop at the page
// size, never a sequential scan of a seeded table or a sort of the whole list.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SeedSizes, seedScale } from '../bench/seed.ts';
import { createTestUser, type TestUser } from '../support/fixtures.ts';
import { startTestService, type TestService } from '../support/service.ts';
import {
  recordStatements,
  type SentStatement,
  type StatementRecorder,
} from '../support/statement-recorder.ts';

// Small enough for CI, big enough that a plan walking the whole list (or the whole table) shows up.
const SIZES: SeedSizes = {
  users: 3_000,
  organizations: 300,
  membersPerOrganization: 5,
  projects: 6_000,
  glossaries: 20,
  entriesPerGlossary: 10,
  bigProjects: 2_000,
  bigMembers: 2_000,
  bigOtherLists: 1_000,
};

const SEEDED = new Set([
  'users',
  'accounts',
  'organizations',
  'memberships',
  'invitations',
  'projects',
  'account_tokens',
  'account_models',
]);

const PAGE = 20;
/** The most rows any one plan node may produce or filter out for a first page (a page, plus lookups). */
const ROW_BUDGET = 3 * (PAGE + 1);

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

function* nodes(plan: PlanNode): Generator<PlanNode> {
  yield plan;
  for (const child of plan.Plans ?? []) yield* nodes(child);
}

// The service runs in this process on the same `pg` module: its statements are recorded at the driver.
let recorder: StatementRecorder | undefined;

describe('first pages of big lists', () => {
  let service: TestService;
  let caller: TestUser;
  let explainer: pg.Client;

  beforeAll(async () => {
    service = await startTestService();
    caller = await createTestUser(service, 'planner');
    explainer = new pg.Client({ connectionString: service.database.url });
    await explainer.connect();
    await seedScale(explainer, SIZES, { callerUserId: caller.userId });
    // The planner costs the embedded PostgreSQL runs with and docs/performance.md tells operators to set.
    await explainer.query('set random_page_cost = 1.1');
    recorder = recordStatements();
  }, 120_000);

  afterAll(async () => {
    recorder?.restore();
    await explainer?.end();
    await service?.close();
  });

  async function statementsOf(path: string): Promise<SentStatement[]> {
    const { sent } = recorder!;
    sent.length = 0;
    recorder!.start();
    const response = await fetch(`${service.url}${path}`, {
      headers: { authorization: `Bearer ${caller.token}` },
    });
    recorder!.stop();
    const body = (await response.json()) as { items?: unknown[] };
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(body.items).toHaveLength(PAGE);
    return sent.filter((s) => s.client !== explainer && /^\s*select\b/i.test(s.text));
  }

  async function planOf(statement: SentStatement): Promise<PlanNode> {
    const result = await explainer.query(
      `explain (analyze, format json) ${statement.text}`,
      statement.values as unknown[],
    );
    return (result.rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan;
  }

  it.each([
    ['projects', '/api/v1/accounts/seed-big/projects', 'projects'],
    ['members', '/api/v1/organizations/seed-big/members', 'memberships'],
    ['invitations', '/api/v1/organizations/seed-big/invitations', 'invitations'],
    ['tokens', '/api/v1/accounts/seed-big/tokens', 'account_tokens'],
    ['models', '/api/v1/accounts/seed-big/models', 'account_models'],
  ])('%s: every statement of the first page reads about a page of rows', async (_name, path, table) => {
    const statements = await statementsOf(`${path}?limit=${PAGE}`);
    const listed: PlanNode[] = [];
    for (const statement of statements) {
      const plan = await planOf(statement);
      const where = `${statement.text}\n${JSON.stringify(plan, null, 1)}`;
      for (const node of nodes(plan)) {
        // A sequential scan is fine on a table of a few rows (oidc_models here), never on a seeded one.
        if (node['Relation Name'] && SEEDED.has(node['Relation Name'])) {
          expect(node['Node Type'], where).not.toBe('Seq Scan');
        }
        // A sort is fine on a page of rows; the budget below catches a sort of the whole list.
        expect(node['Actual Rows'] * node['Actual Loops'], where).toBeLessThanOrEqual(ROW_BUDGET);
        expect(node['Rows Removed by Filter'] ?? 0, where).toBeLessThanOrEqual(ROW_BUDGET);
        if (node['Relation Name'] === table) listed.push(node);
      }
    }
    // The list itself was read through an index, and only as far as the page (plus the look-ahead row).
    const pageScan = listed.find((n) => /Index/.test(n['Node Type']) && n['Actual Rows'] >= PAGE);
    expect(pageScan, JSON.stringify(listed)).toBeDefined();
    expect(pageScan!['Actual Rows']).toBeLessThanOrEqual(PAGE + 1);
  });
});
