/**
 * The developer module, through real HTTP and GraphQL: developer
 * applications and their review (profile, team with default roles, in-app and e-mail
 * notifications), `me.isDeveloper`, developer verification and its review, developer keys
 * (eligibility, scope rules, team keys gated on `team-secrets:edit`, rename, soft revoke that
 * fails closed, surviving the creator's departure, the first-party gate refusing a developer key)
 * and teams (CRUD, members, invite codes, custom roles, cached team permissions dropped on change).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { openapiDocument } from '../../generated/openapi-document';
import { defaultTeamRoles, teamPermissions } from '../../src/auth/registry';
import { createSecretBox } from '../../src/auth/secrets';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type ApiResult, type LoggedIn } from '../helpers/users';

const DEV_KEY = /^lm_dev_[0-9a-f]{64}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const AUTH_REQUIRED = { error: 'UNAUTHORIZED', message: 'Authentication required' };
const FIRST_PARTY = { error: 'FORBIDDEN', message: "This operation requires a user session or the user's own API key" };
const DEVELOPER_ONLY = { error: 'FORBIDDEN', message: 'This operation requires an approved developer' };
const TEAM_NOT_FOUND = { error: 'NOT_FOUND', message: 'Team not found' };
const KEY_NOT_FOUND = { error: 'NOT_FOUND', message: 'Developer key not found' };
const NOT_VERIFIER = { error: 'FORBIDDEN', message: 'You must be an approved developer to submit verification' };
const missing = (p: string) => ({ error: 'FORBIDDEN', message: `Missing permission: ${p}` });
const invalid = (message: string) => ({ error: 'VALIDATION_ERROR', message });
const conflict = (message: string) => ({ error: 'CONFLICT', message });

const KEY_FIELDS = 'id developerId teamId createdBy keyPrefix label permissions createdAt updatedAt expiresAt lastUsedAt';
const APPLICATION_FIELDS = 'id userId applicationType displayName slug status reviewNotes';
const VERIFICATION_FIELDS = 'id developerId legalName country status reviewNotes reviewedBy';
const Q = {
  keys: `query { developerApiKeys { ${KEY_FIELDS} } }`,
  createKey: `mutation($input: CreateDeveloperApiKeyInput!) { createDeveloperApiKey(input: $input) { key developerApiKey { ${KEY_FIELDS} } } }`,
  updateKey: `mutation($id: UUID!, $label: String!) { updateDeveloperApiKey(id: $id, label: $label) { ${KEY_FIELDS} } }`,
  revokeKey: 'mutation($id: UUID!) { revokeDeveloperApiKey(id: $id) { success id } }',
  application: `query { myDeveloperApplication { ${APPLICATION_FIELDS} } }`,
  submitApplication: `mutation($input: SubmitDeveloperApplicationInput!) { submitDeveloperApplication(input: $input) { ${APPLICATION_FIELDS} } }`,
  verification: `query { developerVerificationStatus { ${VERIFICATION_FIELDS} } }`,
  submitVerification: `mutation($input: SubmitDeveloperVerificationInput!) { submitDeveloperVerification(input: $input) { ${VERIFICATION_FIELDS} } }`,
  me: 'query { me { id isDeveloper } }',
} as const;

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function expectRestError(res: ApiResult, status: number, body: { error: string; message: string }): void {
  expect({ status: res.status, body: res.body }).toEqual({ status, body });
}

type GqlResult = Awaited<ReturnType<typeof gql>>;

function expectGqlError(res: GqlResult, body: { error: string; message: string }): void {
  expect(res.status).toBeLessThan(500);
  expect(res.body.errors).toHaveLength(1);
  expect(res.body.errors![0]).toMatchObject({ message: body.message, extensions: { code: body.error } });
}

const slugOf = (prefix = 'dev') => `${prefix}-${randomUUID().slice(0, 8)}`;

const applicationBody = (overrides: Record<string, unknown> = {}) => ({
  application_type: 'solo',
  display_name: 'Studio',
  slug: slugOf(),
  description: 'We build overlays.',
  motivation: 'Fun.',
  what_to_build: 'A chat widget.',
  ...overrides,
});

const verificationBody = (overrides: Record<string, unknown> = {}) => ({
  legal_name: 'Ada Lovelace',
  address_line1: '1 Analytical Street',
  postal_code: '10115',
  city: 'Berlin',
  country: 'de',
  ...overrides,
});

const operatorEmail = `operator-${randomUUID()}@example.test`;

describe('developer portal', () => {
  // A known key, so the test can open the outbox bodies the mail module seals at rest.
  const mailKey = { id: 'dev-test', key: randomBytes(32).toString('base64') };
  const box = createSecretBox([mailKey]);
  const t = useTestApp({ rate_limits: { enabled: false }, auth: { bootstrap_admins: [operatorEmail] }, secrets: { encryption_keys: [mailKey] } });
  let operator: LoggedIn;

  /** The mail queued so far (the outbox of src/modules/mail), oldest first. */
  async function outbox(): Promise<{ to: string; topic: string; subject: string; text: string }[]> {
    const rows = await t.app.db.knex('mail_outbox').orderBy([{ column: 'created_at' }, { column: 'id' }]).select('to_address', 'kind', 'subject', 'text_body');
    return rows.map((r) => ({ to: r.to_address, topic: r.kind, subject: r.subject, text: box.open(r.text_body) }));
  }

  beforeAll(async () => {
    operator = await devLogin(t, operatorEmail);
  });

  async function submit(user: LoggedIn, overrides: Record<string, unknown> = {}): Promise<Record<string, any>> {
    const res = await api(t, 'POST', '/developer/application', { token: user.accessToken, body: applicationBody(overrides) });
    if (res.status !== 201) throw new Error(`application: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data as Record<string, any>;
  }

  /** A new user whose solo (or team) application the operator approved. */
  async function developer(type: 'solo' | 'team' = 'solo'): Promise<LoggedIn & { slug: string }> {
    const user = await devLogin(t);
    const slug = slugOf(type);
    const app = await submit(user, { application_type: type, slug });
    const approved = await api(t, 'POST', `/admin/developer-applications/${app.id}/approve`, { token: operator.accessToken, body: {} });
    if (approved.status !== 200) throw new Error(`approve: ${approved.status} ${JSON.stringify(approved.body)}`);
    return { ...user, slug };
  }

  async function createTeam(owner: LoggedIn, overrides: Record<string, unknown> = {}): Promise<Record<string, any>> {
    const res = await api(t, 'POST', '/developer/teams', { token: owner.accessToken, body: { name: 'Team', slug: slugOf('team'), ...overrides } });
    if (res.status !== 201) throw new Error(`team: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data as Record<string, any>;
  }

  async function roleId(owner: LoggedIn, teamId: string, name: string): Promise<string> {
    const roles = (await api(t, 'GET', `/developer/teams/${teamId}/roles`, { token: owner.accessToken })).body.data as Record<string, any>[];
    return roles.find((r) => r.name === name)!.id as string;
  }

  /** `member` joins the team through an invite code for `role`. */
  async function join(owner: LoggedIn, teamId: string, member: LoggedIn, role = 'team-member'): Promise<void> {
    const invite = await api(t, 'POST', `/developer/teams/${teamId}/invites`, { token: owner.accessToken, body: { role_id: await roleId(owner, teamId, role) } });
    if (invite.status !== 201) throw new Error(`invite: ${invite.status} ${JSON.stringify(invite.body)}`);
    const accepted = await api(t, 'POST', `/developer/team-invites/${(invite.body.data as Record<string, string>).code}/accept`, { token: member.accessToken });
    if (accepted.status !== 200) throw new Error(`accept: ${accepted.status} ${JSON.stringify(accepted.body)}`);
  }

  async function createKey(user: LoggedIn, body: Record<string, unknown>): Promise<Record<string, any>> {
    const res = await api(t, 'POST', '/developer/api-keys', { token: user.accessToken, body });
    if (res.status !== 201) throw new Error(`developer key: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data as Record<string, any>;
  }

  const tokensMe = (token: string) => api(t, 'GET', '/tokens/me', { token });
  const auditOf = (type: string) => t.app.db.knex('audit_log').where({ type }) as Promise<Record<string, any>[]>;

  // =============================================================================================
  describe('applications', () => {
    test('none yet: 404 No developer application found on both protocols', async () => {
      const user = await devLogin(t);
      expectRestError(await api(t, 'GET', '/developer/application', { token: user.accessToken }), 404, { error: 'NOT_FOUND', message: 'No developer application found' });
      expectGqlError(await gql(t.url, Q.application, {}, bearer(user.accessToken)), { error: 'NOT_FOUND', message: 'No developer application found' });
    });

    test.each([
      [{ application_type: 'company' }, "application_type must be 'solo' or 'team'"],
      [{ slug: 'ab' }, 'Slug must be between 3 and 50 characters'],
      [{ slug: `a${'b'.repeat(50)}` }, 'Slug must be between 3 and 50 characters'],
      [{ slug: '1studio' }, 'Slug must start with a lowercase letter'],
      [{ slug: 'Studio' }, 'Slug must start with a lowercase letter'],
      [{ slug: 'my_studio' }, 'Slug must contain only lowercase letters, digits, and hyphens'],
      [{ slug: 'my-Studio' }, 'Slug must contain only lowercase letters, digits, and hyphens'],
      [{ display_name: '  ' }, 'display_name is required'],
    ])('400 %j: %s (same on GraphQL), nothing stored', async (overrides, message) => {
      const user = await devLogin(t);
      expectRestError(await api(t, 'POST', '/developer/application', { token: user.accessToken, body: applicationBody(overrides) }), 400, invalid(message));
      const body = applicationBody(overrides);
      const input = { applicationType: body.application_type, displayName: body.display_name, slug: body.slug, description: body.description, motivation: body.motivation, whatToBuild: body.what_to_build };
      expectGqlError(await gql(t.url, Q.submitApplication, { input }, bearer(user.accessToken)), invalid(message));
      expect(await t.app.db.knex('developer_applications').where({ user_id: user.userId })).toHaveLength(0);
    });

    test('submit: 201 pending with every field; the latest is readable; a second pending one and a taken slug are 409', async () => {
      const user = await devLogin(t);
      const slug = slugOf();
      const res = await api(t, 'POST', '/developer/application', {
        token: user.accessToken,
        body: applicationBody({ slug, application_type: 'team', github_url: 'https://github.com/x', experience: 'Years' }),
      });
      expect(res.status).toBe(201);
      const app = res.body.data as Record<string, any>;
      expect(Object.keys(app).sort()).toEqual(
        [
          'application_type', 'avatar_key', 'created_at', 'description', 'display_name', 'experience', 'github_url', 'id', 'motivation', 'review_notes', 'reviewed_at',
          'reviewed_by', 'slug', 'status', 'updated_at', 'user_id', 'website_url', 'what_to_build',
        ].sort(),
      );
      expect(app).toMatchObject({ user_id: user.userId, application_type: 'team', slug, status: 'pending', github_url: 'https://github.com/x', website_url: null, experience: 'Years', review_notes: null });
      expect((await api(t, 'GET', '/developer/application', { token: user.accessToken })).body.data).toEqual(app);
      const viaGql = await gql(t.url, Q.application, {}, bearer(user.accessToken));
      expect(viaGql.body.data!.myDeveloperApplication).toMatchObject({ id: app.id, applicationType: 'team', status: 'pending' });

      expectRestError(await api(t, 'POST', '/developer/application', { token: user.accessToken, body: applicationBody() }), 409, conflict('You already have a pending application'));
      const other = await devLogin(t);
      expectRestError(await api(t, 'POST', '/developer/application', { token: other.accessToken, body: applicationBody({ slug }) }), 409, conflict('Slug is already taken'));
      const input = { applicationType: 'solo', displayName: 'X', slug, description: 'd', motivation: 'm', whatToBuild: 'w' };
      expectGqlError(await gql(t.url, Q.submitApplication, { input }, bearer(other.accessToken)), conflict('Slug is already taken'));
    });

    test('admin list, read, reject (notes required) and re-apply; gated on developer-verifications:read|edit', async () => {
      const user = await devLogin(t);
      const app = await submit(user);
      expectRestError(await api(t, 'GET', '/admin/developer-applications', { token: user.accessToken }), 403, missing('developer-verifications:read'));
      expectRestError(await api(t, 'POST', `/admin/developer-applications/${app.id}/reject`, { token: user.accessToken, body: { notes: 'x' } }), 403, missing('developer-verifications:edit'));

      const list = await api(t, 'GET', '/admin/developer-applications', { token: operator.accessToken, query: { status: 'pending', limit: '100' } });
      expect(list.status).toBe(200);
      expect(Object.keys(list.body).sort()).toEqual(['items', 'total']);
      const item = (list.body.items as Record<string, any>[]).find((i) => i.id === app.id);
      expect(item).toEqual({
        id: app.id,
        user_id: user.userId,
        application_type: 'solo',
        display_name: 'Studio',
        slug: app.slug,
        status: 'pending',
        created_at: app.created_at,
        user_display_name: expect.any(String),
        user_avatar_url: null,
      });
      expect((await api(t, 'GET', `/admin/developer-applications/${app.id}`, { token: operator.accessToken })).body.data).toEqual(app);
      expectRestError(await api(t, 'GET', `/admin/developer-applications/${randomUUID()}`, { token: operator.accessToken }), 404, { error: 'NOT_FOUND', message: 'Developer application not found' });

      expectRestError(await api(t, 'POST', `/admin/developer-applications/${app.id}/reject`, { token: operator.accessToken, body: { notes: '  ' } }), 400, invalid('Review notes are required'));
      expectRestError(await api(t, 'POST', `/admin/developer-applications/${app.id}/reject`, { token: operator.accessToken, body: {} }), 400, invalid('Review notes are required'));
      const sentBefore = (await outbox()).length;
      const rejected = await api(t, 'POST', `/admin/developer-applications/${app.id}/reject`, { token: operator.accessToken, body: { notes: 'Tell us more.' } });
      expect(rejected.status).toBe(200);
      expect(rejected.body).toEqual({ success: true, new_status: 'rejected' });
      expect((await api(t, 'GET', '/developer/application', { token: user.accessToken })).body.data).toMatchObject({ status: 'rejected', review_notes: 'Tell us more.', reviewed_by: operator.userId });
      expectRestError(await api(t, 'POST', `/admin/developer-applications/${app.id}/approve`, { token: operator.accessToken }), 409, conflict('Developer application is not pending'));
      // In-app and e-mail notification of the rejection.
      const notes = (await api(t, 'GET', '/notifications', { token: user.accessToken })).body.data as Record<string, any>[];
      expect(notes.find((n) => n.type === 'developer_application')).toMatchObject({ data: { applicationId: app.id, status: 'rejected', notes: 'Tell us more.' } });
      expect((await outbox()).slice(sentBefore)).toEqual([expect.objectContaining({ to: user.email, topic: 'developer_application', text: expect.stringContaining('Tell us more.') })]);
      // A rejected applicant may apply again; rejected is listed under its status.
      const again = await submit(user);
      expect(again.status).toBe('pending');
      const rejectedList = await api(t, 'GET', '/admin/developer-applications', { token: operator.accessToken, query: { status: 'rejected', limit: '100' } });
      expect((rejectedList.body.items as Record<string, any>[]).every((i) => i.status === 'rejected')).toBe(true);
      expect((rejectedList.body.items as Record<string, any>[]).some((i) => i.id === app.id)).toBe(true);
    });

    test('approve (solo): creates the profile, in-app and e-mail notification, me.isDeveloper true; a new application is 409', async () => {
      const user = await devLogin(t);
      expect((await gql(t.url, Q.me, {}, bearer(user.accessToken))).body.data!.me).toMatchObject({ isDeveloper: false });
      const app = await submit(user, { github_url: 'https://github.com/solo' });
      const sentBefore = (await outbox()).length;
      const approved = await api(t, 'POST', `/admin/developer-applications/${app.id}/approve`, { token: operator.accessToken, body: { notes: 'Welcome' } });
      expect(approved.status).toBe(200);
      expect(approved.body).toEqual({ success: true, new_status: 'approved' });

      const profile = await t.app.modules.developer.profileOfUser(user.userId);
      expect(profile).toMatchObject({ userId: user.userId, slug: app.slug, displayName: 'Studio', githubUrl: 'https://github.com/solo', description: 'We build overlays.' });
      expect(await t.app.modules.developer.profileBySlug(app.slug)).toEqual(profile);
      expect(await t.app.modules.developer.profileById(profile!.id)).toEqual(profile);
      expect(await t.app.modules.developer.teamsOfUser(user.userId)).toEqual([]);
      expect((await api(t, 'GET', '/me', { token: user.accessToken })).body.data).toMatchObject({ is_developer: true });
      expect((await gql(t.url, Q.me, {}, bearer(user.accessToken))).body.data!.me).toMatchObject({ isDeveloper: true });
      const notes = (await api(t, 'GET', '/notifications', { token: user.accessToken })).body.data as Record<string, any>[];
      expect(notes.find((n) => n.type === 'developer_application')).toMatchObject({ data: { applicationId: app.id, status: 'approved', developerId: profile!.id } });
      expect((await outbox()).slice(sentBefore)).toEqual([expect.objectContaining({ to: user.email, topic: 'developer_application', subject: 'Your developer application was approved' })]);
      expect(await auditOf('system:developer_application_approved')).toEqual(expect.arrayContaining([expect.objectContaining({ user_id: user.userId, actor_id: operator.userId })]));

      expectRestError(await api(t, 'POST', '/developer/application', { token: user.accessToken, body: applicationBody() }), 409, conflict('You already have a developer profile'));
      // The profile's slug is taken for everyone else.
      const other = await devLogin(t);
      expectRestError(await api(t, 'POST', '/developer/application', { token: other.accessToken, body: applicationBody({ slug: app.slug }) }), 409, conflict('Slug is already taken'));
    });

    test('approve (team): also a team owned by the applicant with exactly the default team roles', async () => {
      const owner = await developer('team');
      const teams = await t.app.modules.developer.teamsOfUser(owner.userId);
      expect(teams).toHaveLength(1);
      expect(teams[0]).toMatchObject({ slug: owner.slug, name: 'Studio', ownerUserId: owner.userId });
      expect(await t.app.modules.developer.teamBySlug(owner.slug)).toEqual(teams[0]);
      const roles = (await api(t, 'GET', `/developer/teams/${teams[0]!.id}/roles`, { token: owner.accessToken })).body.data as Record<string, any>[];
      expect(roles.map((r) => ({ name: r.name, is_system: r.is_system, permissions: [...r.permissions].sort() }))).toEqual(
        defaultTeamRoles.map((r) => ({ name: r.name, is_system: r.isSystem, permissions: [...r.permissions].sort() })),
      );
      expect(roles.find((r) => r.name === 'team-owner')!.permissions).toHaveLength(20);
      expect([...roles.find((r) => r.name === 'team-admin')!.permissions].sort()).toEqual(
        teamPermissions.filter((p) => !['team-settings:edit', 'team-payouts:edit', 'team-members:remove'].includes(p)).sort(),
      );
      expect([...roles.find((r) => r.name === 'team-member')!.permissions].sort()).toEqual(
        ['team-extensions:create', 'team-extensions:edit', 'team-extensions:analytics', 'team-versions:create', 'team-members:read', 'team-secrets:read', 'team-settings:read'].sort(),
      );
      expect(await t.app.modules.developer.teamMembers(teams[0]!.id)).toEqual([{ userId: owner.userId, displayName: expect.any(String), avatarUrl: null, role: 'team-owner' }]);
      expect(await t.app.modules.developer.hasTeamPermission(teams[0]!.id, owner.userId, 'team-settings:edit')).toBe(true);
    });
  });

  // =============================================================================================
  describe('verification', () => {
    test('needs a developer profile: 403 on both protocols, read and submit', async () => {
      const user = await devLogin(t);
      expectRestError(await api(t, 'GET', '/developer/verification', { token: user.accessToken }), 403, NOT_VERIFIER);
      expectRestError(await api(t, 'POST', '/developer/verification', { token: user.accessToken, body: verificationBody() }), 403, NOT_VERIFIER);
      expectGqlError(await gql(t.url, Q.verification, {}, bearer(user.accessToken)), NOT_VERIFIER);
      expectGqlError(await gql(t.url, Q.submitVerification, { input: { legalName: 'x' } }, bearer(user.accessToken)), NOT_VERIFIER);
    });

    test.each([
      [{ legal_name: null }, 'Legal name is required'],
      [{ legal_name: ' ' }, 'Legal name is required'],
      [{ address_line1: undefined }, 'Address line 1 is required'],
      [{ postal_code: '' }, 'Postal code is required'],
      [{ city: undefined }, 'City is required'],
      [{ country: undefined }, 'Country is required'],
      [{ country: 'DEU' }, 'Country must be a 2-letter ISO code'],
      [{ country: 'd1' }, 'Country must be a 2-letter ISO code'],
    ])('400 %j: %s', async (overrides, message) => {
      const dev = await developer();
      const body = verificationBody(overrides);
      expectRestError(await api(t, 'POST', '/developer/verification', { token: dev.accessToken, body }), 400, invalid(message));
      const input = { legalName: body.legal_name, addressLine1: body.address_line1, postalCode: body.postal_code, city: body.city, country: body.country };
      expectGqlError(await gql(t.url, Q.submitVerification, { input }, bearer(dev.accessToken)), invalid(message));
      expect((await api(t, 'GET', '/developer/verification', { token: dev.accessToken })).body.data).toBeNull();
    });

    test('upsert while pending or rejected, admin reject (notes required) and approve, then 409; audit without personal data', async () => {
      const dev = await developer();
      const none = await api(t, 'GET', '/developer/verification', { token: dev.accessToken });
      expect(none.status).toBe(200);
      expect(none.body.data).toBeNull();
      expect((await gql(t.url, Q.verification, {}, bearer(dev.accessToken))).body.data).toEqual({ developerVerificationStatus: null });

      const first = await api(t, 'POST', '/developer/verification', { token: dev.accessToken, body: verificationBody({ company_name: 'Engines Ltd', tax_id: 'DE123' }) });
      expect(first.status).toBe(201);
      const record = first.body.data as Record<string, any>;
      expect(record).toMatchObject({ legal_name: 'Ada Lovelace', company_name: 'Engines Ltd', country: 'DE', tax_id: 'DE123', status: 'pending', review_notes: null, reviewed_by: null, reviewed_at: null });
      expect(record.id).toMatch(UUID);
      // Resubmitted while pending: the same record, updated.
      const second = await api(t, 'POST', '/developer/verification', { token: dev.accessToken, body: verificationBody({ city: 'Hamburg' }) });
      expect(second.body.data).toMatchObject({ id: record.id, city: 'Hamburg', company_name: null, status: 'pending' });

      // The audit rows carry ids and status only.
      const audits = (await auditOf('developer:verification_submitted')).filter((a) => a.user_id === dev.userId);
      expect(audits).toHaveLength(2);
      for (const a of audits) {
        const serialised = JSON.stringify(a.metadata);
        for (const personal of ['Ada', 'Lovelace', 'Analytical', '10115', 'Berlin', 'Hamburg', 'Engines', 'DE123']) expect(serialised).not.toContain(personal);
        expect(a.metadata).toMatchObject({ verification_id: record.id, status: 'pending' });
      }
      const mine = await api(t, 'GET', '/me/audit-log', { token: dev.accessToken, query: { type: 'developer:verification_submitted' } });
      expect((mine.body.items as unknown[]).length).toBe(2);

      // Admin review.
      expectRestError(await api(t, 'GET', '/admin/developer-verifications', { token: dev.accessToken }), 403, missing('developer-verifications:read'));
      const queue = await api(t, 'GET', '/admin/developer-verifications', { token: operator.accessToken, query: { status: 'pending', limit: '100' } });
      expect((queue.body.items as Record<string, any>[]).some((v) => v.id === record.id)).toBe(true);
      expect((await api(t, 'GET', `/admin/developer-verifications/${record.id}`, { token: operator.accessToken })).body.data).toMatchObject({ id: record.id, city: 'Hamburg' });
      expectRestError(await api(t, 'GET', `/admin/developer-verifications/${randomUUID()}`, { token: operator.accessToken }), 404, { error: 'NOT_FOUND', message: 'Developer verification not found' });
      expectRestError(await api(t, 'POST', `/admin/developer-verifications/${record.id}/reject`, { token: operator.accessToken, body: {} }), 400, invalid('Review notes are required'));
      const sentBefore = (await outbox()).length;
      expect((await api(t, 'POST', `/admin/developer-verifications/${record.id}/reject`, { token: operator.accessToken, body: { notes: 'Blurry document' } })).body).toEqual({
        success: true,
        new_status: 'rejected',
      });
      expect((await outbox()).slice(sentBefore)).toEqual([expect.objectContaining({ to: dev.email, topic: 'developer_verification' })]);
      expect((await api(t, 'GET', '/developer/verification', { token: dev.accessToken })).body.data).toMatchObject({ status: 'rejected', review_notes: 'Blurry document', reviewed_by: operator.userId });
      expectRestError(await api(t, 'POST', `/admin/developer-verifications/${record.id}/approve`, { token: operator.accessToken }), 409, conflict('Developer verification is not pending'));

      // Resubmitted after rejection: pending again, the verdict cleared (GraphQL this time).
      const resubmitted = await gql(t.url, Q.submitVerification, { input: { legalName: 'Ada King', addressLine1: 'x', postalCode: '1', city: 'c', country: 'gb' } }, bearer(dev.accessToken));
      expect(resubmitted.body.data!.submitDeveloperVerification).toEqual({ id: record.id, developerId: record.developer_id, legalName: 'Ada King', country: 'GB', status: 'pending', reviewNotes: null, reviewedBy: null });

      expect((await api(t, 'POST', `/admin/developer-verifications/${record.id}/approve`, { token: operator.accessToken, body: {} })).body).toEqual({ success: true, new_status: 'verified' });
      const notes = (await api(t, 'GET', '/notifications', { token: dev.accessToken })).body.data as Record<string, any>[];
      expect(notes.filter((n) => n.type === 'developer_verification').map((n) => n.data.status)).toEqual(['verified', 'rejected']);
      expectRestError(await api(t, 'POST', '/developer/verification', { token: dev.accessToken, body: verificationBody() }), 409, conflict('Your developer verification is already approved'));
      expectGqlError(
        await gql(t.url, Q.submitVerification, { input: { legalName: 'a', addressLine1: 'b', postalCode: 'c', city: 'd', country: 'fr' } }, bearer(dev.accessToken)),
        conflict('Your developer verification is already approved'),
      );
      expect((await api(t, 'GET', '/developer/verification', { token: dev.accessToken })).body.data).toMatchObject({ status: 'verified', legal_name: 'Ada King' });
    });
  });

  // =============================================================================================
  describe('developer keys', () => {
    test('eligibility is approved-developer status: a non-developer gets 403 on both protocols', async () => {
      const user = await devLogin(t);
      const body = { label: 'k', permissions: ['extension-dev:read'] };
      expectRestError(await api(t, 'POST', '/developer/api-keys', { token: user.accessToken, body }), 403, DEVELOPER_ONLY);
      expectRestError(await api(t, 'GET', '/developer/api-keys', { token: user.accessToken }), 403, DEVELOPER_ONLY);
      expectGqlError(await gql(t.url, Q.createKey, { input: body }, bearer(user.accessToken)), DEVELOPER_ONLY);
      expectGqlError(await gql(t.url, Q.keys, {}, bearer(user.accessToken)), DEVELOPER_ONLY);
    });

    test('a profile key: created once with the full key, authenticates as a developer key with exactly its scopes, audit', async () => {
      const dev = await developer();
      const profile = (await t.app.modules.developer.profileOfUser(dev.userId))!;
      const res = await api(t, 'POST', '/developer/api-keys', { token: dev.accessToken, body: { label: ' publish ', permissions: ['extension-dev:read', 'extension-dev:publish'] } });
      expect(res.status).toBe(201);
      const key = res.body.data as Record<string, any>;
      expect(Object.keys(key).sort()).toEqual(['created_at', 'created_by', 'developer_id', 'expires_at', 'id', 'key', 'key_prefix', 'label', 'last_used_at', 'permissions', 'team_id', 'updated_at']);
      expect(key).toMatchObject({ developer_id: profile.id, team_id: null, created_by: dev.userId, label: 'publish', permissions: ['extension-dev:read', 'extension-dev:publish'], expires_at: null });
      expect(key.key).toMatch(DEV_KEY);
      expect(key.key.startsWith(key.key_prefix)).toBe(true);
      expect(res.body._links).toEqual({ self: { href: `/v1/developer/api-keys/${key.id}` } });
      // Only the hash is stored.
      const stored = await t.app.db.knex('credentials').where({ id: key.id }).first();
      expect(JSON.stringify(stored)).not.toContain(key.key);

      const whoami = await tokensMe(key.key);
      expect(whoami.status).toBe(200);
      expect(whoami.body.data).toMatchObject({ context: 'developer_api_key', user_id: null, account_id: null, permissions: ['extension-dev:publish', 'extension-dev:read'] });
      const { context: ctx } = await t.app.credentials.resolve({ authorization: `Bearer ${key.key}`, transport: 'http' });
      expect(ctx.binding).toEqual({ developerId: profile.id });

      const listed = (await api(t, 'GET', '/developer/api-keys', { token: dev.accessToken })).body.data as Record<string, any>[];
      // Its first use was just recorded (last_used_at); everything else is the record as created.
      expect(listed).toEqual([{ ...Object.fromEntries(Object.entries(key).filter(([k]) => k !== 'key')), last_used_at: expect.any(String) }]);
      const viaGql = await gql(t.url, Q.keys, {}, bearer(dev.accessToken));
      expect(viaGql.body.data!.developerApiKeys).toEqual([expect.objectContaining({ id: key.id, developerId: profile.id, teamId: null })]);
      expect(await auditOf('user:developer_api_key_created')).toEqual(
        expect.arrayContaining([expect.objectContaining({ user_id: dev.userId, metadata: expect.objectContaining({ key_id: key.id, developer_id: profile.id }) })]),
      );
    });

    test('scope rules: only extension-dev:*, within the creator’s, label and expiry rules (both protocols)', async () => {
      const dev = await developer();
      expectRestError(await api(t, 'POST', '/developer/api-keys', { token: dev.accessToken, body: { label: 'k', permissions: ['events:read'] } }), 400, invalid('Invalid permission: events:read'));
      expectGqlError(await gql(t.url, Q.createKey, { input: { label: 'k', permissions: ['apikeys:create'] } }, bearer(dev.accessToken)), invalid('Invalid permission: apikeys:create'));
      expectRestError(await api(t, 'POST', '/developer/api-keys', { token: dev.accessToken, body: { label: ' ', permissions: [] } }), 400, invalid('Label is required'));
      expectRestError(
        await api(t, 'POST', '/developer/api-keys', { token: dev.accessToken, body: { label: 'k', permissions: [], expires_at: new Date(Date.now() - 60_000).toISOString() } }),
        400,
        invalid('expires_at cannot be in the past'),
      );
      // In an account where the developer is a moderator they hold no extension-dev scope.
      const owner = await devLogin(t);
      const asModerator = await joinAccount(t, owner, dev, { role: 'moderator' });
      expectRestError(
        await api(t, 'POST', '/developer/api-keys', { token: asModerator.accessToken, body: { label: 'k', permissions: ['extension-dev:read'] } }),
        403,
        { error: 'FORBIDDEN', message: 'Cannot grant permissions you do not hold: extension-dev:read' },
      );
      expect(await t.app.db.knex('developer_api_keys')).not.toEqual(expect.arrayContaining([expect.objectContaining({ developer_id: (await t.app.modules.developer.profileOfUser(dev.userId))!.id })]));
      // GraphQL create answers { key, developerApiKey } with an expiry.
      const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
      const made = await gql(t.url, Q.createKey, { input: { label: 'g', permissions: ['extension-dev:analytics'], expiresAt } }, bearer(dev.accessToken));
      expect(made.body.data!.createDeveloperApiKey).toMatchObject({ key: expect.stringMatching(DEV_KEY), developerApiKey: { label: 'g', permissions: ['extension-dev:analytics'], expiresAt } });
    });

    test('rename (label only) and soft revoke: authentication fails closed at once; both protocols; others cannot touch it', async () => {
      const dev = await developer();
      const other = await developer();
      const key = await createKey(dev, { label: 'one', permissions: ['extension-dev:read'] });
      expectRestError(await api(t, 'PATCH', `/developer/api-keys/${key.id}`, { token: other.accessToken, body: { label: 'x' } }), 404, KEY_NOT_FOUND);
      expectRestError(await api(t, 'DELETE', `/developer/api-keys/${key.id}`, { token: other.accessToken }), 404, KEY_NOT_FOUND);

      const renamed = await api(t, 'PATCH', `/developer/api-keys/${key.id}`, { token: dev.accessToken, body: { label: 'two' } });
      expect(renamed.status).toBe(200);
      expect(renamed.body.data).toMatchObject({ id: key.id, label: 'two', permissions: ['extension-dev:read'] });
      const viaGql = await gql(t.url, Q.updateKey, { id: key.id, label: 'three' }, bearer(dev.accessToken));
      expect(viaGql.body.data!.updateDeveloperApiKey).toMatchObject({ id: key.id, label: 'three' });
      expectGqlError(await gql(t.url, Q.updateKey, { id: key.id, label: ' ' }, bearer(dev.accessToken)), invalid('Label is required'));
      expect((await auditOf('user:developer_api_key_updated')).filter((a) => a.metadata.key_id === key.id)).toHaveLength(2);
      expect((await tokensMe(key.key)).status).toBe(200);

      const revoked = await api(t, 'DELETE', `/developer/api-keys/${key.id}`, { token: dev.accessToken });
      expect(revoked.status).toBe(200);
      expect(revoked.body).toEqual({ success: true, id: key.id });
      expectRestError(await tokensMe(key.key), 401, AUTH_REQUIRED);
      // Soft: the row stays, revoked; gone from the list; a second revoke is 404.
      expect((await t.app.db.knex('credentials').where({ id: key.id }).first()).revoked_at).not.toBeNull();
      expect((await api(t, 'GET', '/developer/api-keys', { token: dev.accessToken })).body.data).toEqual([]);
      expectRestError(await api(t, 'DELETE', `/developer/api-keys/${key.id}`, { token: dev.accessToken }), 404, KEY_NOT_FOUND);
      expectGqlError(await gql(t.url, Q.revokeKey, { id: key.id }, bearer(dev.accessToken)), KEY_NOT_FOUND);
      expect((await auditOf('user:developer_api_key_revoked')).filter((a) => a.metadata.key_id === key.id)).toHaveLength(1);

      const second = await createKey(dev, { label: 'gql', permissions: [] });
      expect((await gql(t.url, Q.revokeKey, { id: second.id }, bearer(dev.accessToken))).body.data).toEqual({ revokeDeveloperApiKey: { success: true, id: second.id } });
      expectRestError(await tokensMe(second.key), 401, AUTH_REQUIRED);
    });

    test('a developer key is refused (403) on first-party routes: key management, the portal, me, personal keys, popout tokens, teams', async () => {
      const dev = await developer();
      const team = await createTeam(dev);
      const key = (await createKey(dev, { label: 'k', permissions: ['extension-dev:read', 'extension-dev:edit', 'extension-dev:create'] })).key as string;
      const keyId = randomUUID();
      const calls: [string, string, unknown?][] = [
        ['GET', '/developer/api-keys'],
        ['POST', '/developer/api-keys', { label: 'x', permissions: [] }],
        ['PATCH', `/developer/api-keys/${keyId}`, { label: 'x' }],
        ['DELETE', `/developer/api-keys/${keyId}`],
        ['GET', '/developer/application'],
        ['POST', '/developer/application', applicationBody()],
        ['GET', '/developer/verification'],
        ['POST', '/developer/verification', verificationBody()],
        ['GET', '/developer/teams'],
        ['POST', '/developer/teams', { name: 'x', slug: slugOf() }],
        ['GET', `/developer/teams/${team.id}`],
        ['GET', `/developer/teams/${team.id}/members`],
        ['POST', `/developer/teams/${team.id}/invites`, {}],
        ['GET', '/me'],
        ['GET', '/accounts'],
        ['GET', '/auth/sessions'],
        ['POST', '/auth/ws-token'],
        ['GET', '/notifications'],
        ['POST', '/tokens', { label: 'p', permissions: [] }],
        ['GET', '/api-keys'],
        ['POST', '/accounts', { name: 'x' }],
      ];
      for (const [method, path, body] of calls) {
        const res = await api(t, method, path, { token: key, ...(body !== undefined ? { body } : {}) });
        expect({ call: `${method} ${path}`, status: res.status, body: res.body }).toEqual({ call: `${method} ${path}`, status: 403, body: FIRST_PARTY });
      }
      for (const query of [Q.keys, Q.application, Q.verification, Q.me]) expectGqlError(await gql(t.url, query, {}, bearer(key)), FIRST_PARTY);
      expectGqlError(await gql(t.url, Q.createKey, { input: { label: 'x', permissions: [] } }, bearer(key)), FIRST_PARTY);
      expectGqlError(await gql(t.url, Q.revokeKey, { id: keyId }, bearer(key)), FIRST_PARTY);
      // It still authenticates where any credential may go.
      expect((await tokensMe(key)).status).toBe(200);
    });

    test('a popout token is refused on the developer surface too', async () => {
      const dev = await developer();
      const popout = await api(t, 'POST', '/tokens', { token: dev.accessToken, body: { label: 'pop', permissions: ['events:read'] } });
      expect(popout.status).toBe(201);
      const token = (popout.body.data as Record<string, string>).token;
      for (const path of ['/developer/api-keys', '/developer/application', '/developer/verification', '/developer/teams']) {
        expectRestError(await api(t, 'GET', path, { query: { token } }), 403, FIRST_PARTY);
      }
    });

    test('team keys: need team-secrets:edit, belong to the team, listed for every member, survive their creator leaving', async () => {
      const owner = await developer();
      const team = await createTeam(owner);
      const admin = await developer();
      const member = await developer();
      const outsider = await developer();
      await join(owner, team.id, admin, 'team-admin');
      await join(owner, team.id, member, 'team-member');
      const body = { label: 'ci', permissions: ['extension-dev:read'], team_id: team.id };

      expectRestError(await api(t, 'POST', '/developer/api-keys', { token: member.accessToken, body }), 403, missing('team-secrets:edit'));
      expectGqlError(await gql(t.url, Q.createKey, { input: { label: 'ci', permissions: ['extension-dev:read'], teamId: team.id } }, bearer(member.accessToken)), missing('team-secrets:edit'));
      expectRestError(await api(t, 'POST', '/developer/api-keys', { token: outsider.accessToken, body }), 404, TEAM_NOT_FOUND);
      expectRestError(await api(t, 'POST', '/developer/api-keys', { token: owner.accessToken, body: { ...body, team_id: randomUUID() } }), 404, TEAM_NOT_FOUND);

      const key = await createKey(admin, body);
      expect(key).toMatchObject({ developer_id: null, team_id: team.id, created_by: admin.userId });
      const { context: ctx } = await t.app.credentials.resolve({ authorization: `Bearer ${key.key}`, transport: 'http' });
      expect(ctx).toMatchObject({ kind: 'developer_api_key', binding: { teamId: team.id } });
      expect(await t.app.db.knex('developer_api_keys').where({ id: key.id }).first()).toEqual({ id: key.id, developer_id: null, team_id: team.id });

      // Listed for every member, not for outsiders.
      for (const user of [owner, admin, member]) {
        const ids = ((await api(t, 'GET', '/developer/api-keys', { token: user.accessToken })).body.data as Record<string, any>[]).map((k) => k.id);
        expect(ids).toContain(key.id);
      }
      expect((await api(t, 'GET', '/developer/api-keys', { token: outsider.accessToken })).body.data).toEqual([]);
      // Every member sees the team's keys (Part 1), also one whose role lacks team-secrets:read; on GraphQL too.
      const reader = await developer();
      expect((await api(t, 'POST', `/developer/teams/${team.id}/roles`, { token: owner.accessToken, body: { name: 'no-secrets', permissions: ['team-members:read'] } })).status).toBe(201);
      await join(owner, team.id, reader, 'no-secrets');
      expect(((await api(t, 'GET', '/developer/api-keys', { token: reader.accessToken })).body.data as Record<string, any>[]).map((k) => k.id)).toContain(key.id);
      expect((((await gql(t.url, Q.keys, {}, bearer(reader.accessToken))).body.data!.developerApiKeys) as Record<string, any>[]).map((k) => k.id)).toContain(key.id);
      // Managing it needs team-secrets:edit.
      expectRestError(await api(t, 'PATCH', `/developer/api-keys/${key.id}`, { token: member.accessToken, body: { label: 'x' } }), 403, missing('team-secrets:edit'));
      expectRestError(await api(t, 'DELETE', `/developer/api-keys/${key.id}`, { token: outsider.accessToken }), 404, KEY_NOT_FOUND);

      // The creator leaves: the key keeps working, created_by is cleared.
      expect((await api(t, 'DELETE', `/developer/teams/${team.id}/members/${admin.userId}`, { token: owner.accessToken })).status).toBe(200);
      expect((await tokensMe(key.key)).status).toBe(200);
      const after = ((await api(t, 'GET', '/developer/api-keys', { token: owner.accessToken })).body.data as Record<string, any>[]).find((k) => k.id === key.id);
      expect(after).toMatchObject({ created_by: null, team_id: team.id });

      // The owner revokes it (team-secrets:edit).
      expect((await api(t, 'DELETE', `/developer/api-keys/${key.id}`, { token: owner.accessToken })).status).toBe(200);
      expectRestError(await tokensMe(key.key), 401, AUTH_REQUIRED);
    });
  });

  // =============================================================================================
  describe('teams', () => {
    test('the spec declares the team slug and name rules the service enforces (the developer slug rules; a blank name is refused)', () => {
      const schemas = openapiDocument.components.schemas as unknown as Record<string, { properties: Record<string, Record<string, unknown>> }>;
      const rules = ({ example: _e, description: _d, ...rest }: Record<string, unknown>) => rest;
      expect(rules(schemas.CreateDeveloperTeamRequest!.properties.slug!)).toEqual(rules(schemas.SubmitDeveloperApplicationRequest!.properties.slug!));
      expect(schemas.CreateDeveloperTeamRequest!.properties.name).toMatchObject({ minLength: 1, pattern: '\\S', 'x-error-message': { pattern: 'name is required' } });
    });

    test('create (developers only; slug rules), list, read, update; the permission list', async () => {
      const user = await devLogin(t);
      expectRestError(await api(t, 'POST', '/developer/teams', { token: user.accessToken, body: { name: 'x', slug: slugOf() } }), 403, DEVELOPER_ONLY);
      const owner = await developer();
      expectRestError(await api(t, 'POST', '/developer/teams', { token: owner.accessToken, body: { name: 'x', slug: 'X-team' } }), 400, invalid('Slug must start with a lowercase letter'));
      expectRestError(await api(t, 'POST', '/developer/teams', { token: owner.accessToken, body: { name: ' ', slug: slugOf() } }), 400, invalid('name is required'));
      expectRestError(await api(t, 'POST', '/developer/teams', { token: owner.accessToken, body: { name: 'x', slug: owner.slug } }), 409, conflict('Slug is already taken'));

      const slug = slugOf('team');
      const res = await api(t, 'POST', '/developer/teams', { token: owner.accessToken, body: { name: 'Makers', slug, description: 'We make', website_url: 'https://m.example' } });
      expect(res.status).toBe(201);
      const team = res.body.data as Record<string, any>;
      expect(team).toMatchObject({ name: 'Makers', slug, description: 'We make', website_url: 'https://m.example', github_url: null, owner_user_id: owner.userId, role: 'team-owner' });
      expect(res.body._links).toEqual({ self: `/v1/developer/teams/${team.id}` });
      expect((await api(t, 'GET', '/developer/teams', { token: owner.accessToken })).body.data).toEqual([team]);
      expect((await api(t, 'GET', `/developer/teams/${team.id}`, { token: owner.accessToken })).body.data).toEqual(team);
      expectRestError(await api(t, 'GET', `/developer/teams/${team.id}`, { token: user.accessToken }), 404, TEAM_NOT_FOUND);
      expectRestError(await api(t, 'GET', `/developer/teams/${randomUUID()}`, { token: owner.accessToken }), 404, TEAM_NOT_FOUND);

      const updated = await api(t, 'PATCH', `/developer/teams/${team.id}`, { token: owner.accessToken, body: { name: 'Makers Guild', description: null, github_url: 'https://github.com/m' } });
      expect(updated.body.data).toMatchObject({ name: 'Makers Guild', description: null, github_url: 'https://github.com/m', website_url: 'https://m.example', slug });

      const permissions = await api(t, 'GET', '/developer/teams/permissions', { token: user.accessToken });
      expect(permissions.status).toBe(200);
      expect((permissions.body.data as Record<string, string>[]).map((p) => p.permission)).toEqual([...teamPermissions]);
      expect(permissions.body.data).toContainEqual({ permission: 'team-secrets:edit', category: 'team-secrets' });
      expectRestError(await api(t, 'GET', '/developer/teams/permissions'), 401, AUTH_REQUIRED);
    });

    test('invites: create (code once), list, look up, accept once; revoke; members and role changes drop the cached permissions', async () => {
      const owner = await developer();
      const team = await createTeam(owner);
      const joiner = await devLogin(t);
      const memberRole = await roleId(owner, team.id, 'team-member');

      const created = await api(t, 'POST', `/developer/teams/${team.id}/invites`, { token: owner.accessToken, body: {} });
      expect(created.status).toBe(201);
      const invite = created.body.data as Record<string, any>;
      expect(invite).toMatchObject({ team_id: team.id, role_id: memberRole, role: 'team-member', invited_by: owner.userId, code: expect.stringMatching(/^[0-9a-f]{32}$/) });
      expect(invite.code.startsWith(invite.code_prefix)).toBe(true);
      expect(JSON.stringify(await t.app.db.knex('developer_team_invites').where({ id: invite.id }).first())).not.toContain(invite.code);
      const listed = (await api(t, 'GET', `/developer/teams/${team.id}/invites`, { token: owner.accessToken })).body.data as Record<string, any>[];
      expect(listed).toEqual([Object.fromEntries(Object.entries(invite).filter(([k]) => k !== 'code'))]);

      const lookup = await api(t, 'GET', `/developer/team-invites/${invite.code}`, { token: joiner.accessToken });
      expect(lookup.body.data).toEqual({ team_id: team.id, team_name: 'Team', team_slug: team.slug, team_avatar_key: null, role: 'team-member', expires_at: invite.expires_at });
      expectRestError(await api(t, 'GET', `/developer/team-invites/${invite.code}`), 401, AUTH_REQUIRED);
      expectRestError(await api(t, 'GET', '/developer/team-invites/nope', { token: joiner.accessToken }), 404, { error: 'NOT_FOUND', message: 'Team invite not found' });

      // Not a member yet: the team is invisible; the cached "no access" answer is dropped on joining.
      expectRestError(await api(t, 'GET', `/developer/teams/${team.id}`, { token: joiner.accessToken }), 404, TEAM_NOT_FOUND);
      const accepted = await api(t, 'POST', `/developer/team-invites/${invite.code}/accept`, { token: joiner.accessToken });
      expect(accepted.status).toBe(200);
      expect(accepted.body.data).toMatchObject({ id: team.id, role: 'team-member' });
      expect((await api(t, 'GET', `/developer/teams/${team.id}`, { token: joiner.accessToken })).status).toBe(200);
      expectRestError(await api(t, 'POST', `/developer/team-invites/${invite.code}/accept`, { token: joiner.accessToken }), 404, { error: 'NOT_FOUND', message: 'Team invite not found' });
      expect((await api(t, 'GET', `/developer/teams/${team.id}/invites`, { token: owner.accessToken })).body.data).toEqual([]);

      // Already a member; a revoked code.
      const second = (await api(t, 'POST', `/developer/teams/${team.id}/invites`, { token: owner.accessToken, body: { expires_in_days: 1 } })).body.data as Record<string, any>;
      expectRestError(await api(t, 'POST', `/developer/team-invites/${second.code}/accept`, { token: joiner.accessToken }), 409, conflict('You are already a member of this team'));
      expect((await api(t, 'DELETE', `/developer/teams/${team.id}/invites/${second.id}`, { token: owner.accessToken })).body).toEqual({ success: true });
      expectRestError(await api(t, 'GET', `/developer/team-invites/${second.code}`, { token: joiner.accessToken }), 404, { error: 'NOT_FOUND', message: 'Team invite not found' });
      expectRestError(await api(t, 'DELETE', `/developer/teams/${team.id}/invites/${second.id}`, { token: owner.accessToken }), 404, { error: 'NOT_FOUND', message: 'Team invite not found' });
      // An expired code.
      const third = (await api(t, 'POST', `/developer/teams/${team.id}/invites`, { token: owner.accessToken, body: {} })).body.data as Record<string, any>;
      await t.app.db.knex('developer_team_invites').where({ id: third.id }).update({ expires_at: new Date(Date.now() - 1000) });
      const stranger = await devLogin(t);
      expectRestError(await api(t, 'POST', `/developer/team-invites/${third.code}/accept`, { token: stranger.accessToken }), 409, conflict('Team invite has expired'));

      // Members and team-scope gates: team-member cannot invite or edit settings.
      const members = (await api(t, 'GET', `/developer/teams/${team.id}/members`, { token: joiner.accessToken })).body.data as Record<string, any>[];
      expect(members.map((m) => ({ user_id: m.user_id, role: m.role, is_owner: m.is_owner }))).toEqual([
        { user_id: owner.userId, role: 'team-owner', is_owner: true },
        { user_id: joiner.userId, role: 'team-member', is_owner: false },
      ]);
      expectRestError(await api(t, 'POST', `/developer/teams/${team.id}/invites`, { token: joiner.accessToken, body: {} }), 403, missing('team-members:invite'));
      expectRestError(await api(t, 'PATCH', `/developer/teams/${team.id}`, { token: joiner.accessToken, body: { name: 'x' } }), 403, missing('team-settings:edit'));
      expect(await t.app.modules.developer.hasTeamPermission(team.id, joiner.userId, 'team-members:invite')).toBe(false);

      // Promoted to team-admin: the cached permissions are dropped at once.
      const adminRole = await roleId(owner, team.id, 'team-admin');
      const promoted = await api(t, 'PATCH', `/developer/teams/${team.id}/members/${joiner.userId}/role`, { token: owner.accessToken, body: { role_id: adminRole } });
      expect(promoted.body.data).toMatchObject({ user_id: joiner.userId, role: 'team-admin', role_id: adminRole, is_owner: false });
      expect(await t.app.modules.developer.hasTeamPermission(team.id, joiner.userId, 'team-members:invite')).toBe(true);
      expect((await api(t, 'POST', `/developer/teams/${team.id}/invites`, { token: joiner.accessToken, body: {} })).status).toBe(201);
      // A team-admin cannot offer or assign a role above their own, nor touch the owner.
      const ownerRole = await roleId(owner, team.id, 'team-owner');
      expectRestError(await api(t, 'POST', `/developer/teams/${team.id}/invites`, { token: joiner.accessToken, body: { role_id: ownerRole } }), 409, conflict('The team-owner role cannot be assigned'));
      const full = (await api(t, 'POST', `/developer/teams/${team.id}/roles`, { token: owner.accessToken, body: { name: 'full', permissions: ['team-settings:edit'] } })).body.data as Record<string, any>;
      expectRestError(
        await api(t, 'POST', `/developer/teams/${team.id}/invites`, { token: joiner.accessToken, body: { role_id: full.id } }),
        403,
        { error: 'FORBIDDEN', message: 'Cannot grant team permissions you do not hold: team-settings:edit' },
      );
      expectRestError(await api(t, 'PATCH', `/developer/teams/${team.id}/members/${owner.userId}/role`, { token: joiner.accessToken, body: { role_id: adminRole } }), 409, conflict("The team owner's role cannot be changed"));
      expectRestError(await api(t, 'DELETE', `/developer/teams/${team.id}/members/${owner.userId}`, { token: owner.accessToken }), 409, conflict('The team owner cannot be removed'));
      expectRestError(await api(t, 'DELETE', `/developer/teams/${team.id}/members/${owner.userId}`, { token: joiner.accessToken }), 403, missing('team-members:remove'));
      expectRestError(await api(t, 'DELETE', `/developer/teams/${team.id}/members/${randomUUID()}`, { token: owner.accessToken }), 404, { error: 'NOT_FOUND', message: 'Team member not found' });

      // Removed: access ends at once.
      expect((await api(t, 'DELETE', `/developer/teams/${team.id}/members/${joiner.userId}`, { token: owner.accessToken })).body).toEqual({ success: true });
      expectRestError(await api(t, 'GET', `/developer/teams/${team.id}`, { token: joiner.accessToken }), 404, TEAM_NOT_FOUND);
      expect(await t.app.modules.developer.hasTeamPermission(team.id, joiner.userId, 'team-settings:read')).toBe(false);
    });

    test('custom roles: validation, name conflicts, edits reach members at once, system role fixed, in-use roles kept', async () => {
      const owner = await developer();
      const team = await createTeam(owner);
      const member = await devLogin(t);
      await join(owner, team.id, member, 'team-member');
      const path = `/developer/teams/${team.id}/roles`;

      expectRestError(await api(t, 'POST', path, { token: owner.accessToken, body: { name: 'x', permissions: ['events:read'] } }), 400, invalid('Invalid permission: events:read'));
      expectRestError(await api(t, 'POST', path, { token: owner.accessToken, body: { name: ' ', permissions: [] } }), 400, invalid('name is required'));
      expectRestError(await api(t, 'POST', path, { token: owner.accessToken, body: { name: 'Team-Admin', permissions: [] } }), 409, conflict('Role name already in use'));
      expectRestError(await api(t, 'POST', path, { token: member.accessToken, body: { name: 'x', permissions: [] } }), 403, missing('team-settings:edit'));

      const created = await api(t, 'POST', path, { token: owner.accessToken, body: { name: 'tester', permissions: ['team-testers:read', 'team-members:read', 'team-testers:read'] } });
      expect(created.status).toBe(201);
      const role = created.body.data as Record<string, any>;
      expect(role).toMatchObject({ team_id: team.id, name: 'tester', is_system: false, permissions: ['team-testers:read', 'team-members:read'], member_count: 0 });

      await api(t, 'PATCH', `/developer/teams/${team.id}/members/${member.userId}/role`, { token: owner.accessToken, body: { role_id: role.id } });
      expect(await t.app.modules.developer.hasTeamPermission(team.id, member.userId, 'team-testers:read')).toBe(true);
      expect(await t.app.modules.developer.hasTeamPermission(team.id, member.userId, 'team-settings:read')).toBe(false);
      const edited = await api(t, 'PATCH', `${path}/${role.id}`, { token: owner.accessToken, body: { name: 'qa', permissions: ['team-settings:read'] } });
      expect(edited.body.data).toMatchObject({ name: 'qa', permissions: ['team-settings:read'], member_count: 1 });
      // The role edit reaches the member's cached permissions at once.
      expect(await t.app.modules.developer.hasTeamPermission(team.id, member.userId, 'team-settings:read')).toBe(true);
      expect(await t.app.modules.developer.hasTeamPermission(team.id, member.userId, 'team-testers:read')).toBe(false);
      expect((await api(t, 'GET', `/developer/teams/${team.id}`, { token: member.accessToken })).body.data).toMatchObject({ role: 'qa' });

      const ownerRole = await roleId(owner, team.id, 'team-owner');
      expectRestError(await api(t, 'PATCH', `${path}/${ownerRole}`, { token: owner.accessToken, body: { name: 'boss' } }), 409, conflict('The team-owner role cannot be changed'));
      expectRestError(await api(t, 'DELETE', `${path}/${ownerRole}`, { token: owner.accessToken }), 409, conflict('Cannot delete system team role'));
      expectRestError(await api(t, 'DELETE', `${path}/${role.id}`, { token: owner.accessToken }), 409, conflict('Role is assigned to 1 member(s)'));
      expectRestError(await api(t, 'DELETE', `${path}/${randomUUID()}`, { token: owner.accessToken }), 404, { error: 'NOT_FOUND', message: 'Team role not found' });
      await api(t, 'PATCH', `/developer/teams/${team.id}/members/${member.userId}/role`, { token: owner.accessToken, body: { role_id: await roleId(owner, team.id, 'team-member') } });
      expect((await api(t, 'DELETE', `${path}/${role.id}`, { token: owner.accessToken })).body).toEqual({ success: true });
      expect(((await api(t, 'GET', path, { token: member.accessToken })).body.data as Record<string, any>[]).map((r) => r.name)).toEqual(['team-owner', 'team-admin', 'team-member']);
    });

    test('delete: the owner only; the team and its keys go (keys fail closed)', async () => {
      const owner = await developer();
      const team = await createTeam(owner);
      const admin = await developer();
      await join(owner, team.id, admin, 'team-admin');
      const key = await createKey(owner, { label: 'team', permissions: ['extension-dev:read'], team_id: team.id });
      expect((await tokensMe(key.key)).status).toBe(200);

      expectRestError(await api(t, 'DELETE', `/developer/teams/${team.id}`, { token: admin.accessToken }), 403, { error: 'FORBIDDEN', message: 'Only the team owner can delete the team' });
      expect((await api(t, 'DELETE', `/developer/teams/${team.id}`, { token: owner.accessToken })).body).toEqual({ success: true });
      expectRestError(await tokensMe(key.key), 401, AUTH_REQUIRED);
      expectRestError(await api(t, 'GET', `/developer/teams/${team.id}`, { token: owner.accessToken }), 404, TEAM_NOT_FOUND);
      expect(await t.app.modules.developer.teamById(team.id)).toBeNull();
      expect(await t.app.modules.developer.hasTeamPermission(team.id, admin.userId, 'team-settings:read')).toBe(false);
      expect((await api(t, 'GET', '/developer/teams', { token: admin.accessToken })).body.data).toEqual([]);
    });
  });
});
