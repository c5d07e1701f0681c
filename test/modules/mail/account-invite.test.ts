/**
 * Account invites by e-mail against a real SMTP server: `POST /v1/account/invites` with `email`
 * invites the user a verified address belongs to (a notification, as `user_id` does); an address
 * no user has is mailed a link whose token joins the account once its holder signs in or up
 * (`acceptAccountInvite`, REST and GraphQL); a user who signs up with the address finds the
 * invite in their notifications; exactly one of `user_id` and `email`. Both stores.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { gql, startTestApp, type TestApp } from '../../helpers/app';
import { smtpMailConfig, startTestSmtp, waitFor, type TestSmtp } from '../../helpers/smtp';
import { api, devLogin } from '../../helpers/users';

const mailKey = { id: 'account-invite-test', key: randomBytes(32).toString('base64') };
let smtp: TestSmtp;
let t: TestApp;

const address = () => `invitee-${randomUUID()}@example.test`;
const mailTo = (to: string) => smtp.received.find((m) => m.envelopeTo.includes(to));
/** The token of the accept link in a mail's text. */
const tokenIn = (text: string) => /\/invites\/accept\?token=([A-Za-z0-9_-]+)/.exec(text)?.[1];

beforeAll(async () => {
  smtp = await startTestSmtp();
  t = await startTestApp({
    rate_limits: { enabled: false },
    log: { level: 'silent' },
    secrets: { encryption_keys: [mailKey] },
    jobs: { poll_interval_ms: 500 },
    mail: smtpMailConfig(smtp.port, 3),
  });
});

afterAll(async () => {
  await t?.stop();
  await smtp?.close();
});

test('an address a user signed in with invites that user, as user_id does', async () => {
  const owner = await devLogin(t, address(), 'Owner One');
  const invitee = await devLogin(t, address());
  const res = await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { email: invitee.email.toUpperCase(), role: 'moderator' } });
  expect(res.status).toBe(201);
  expect(res.body.data).toMatchObject({ user_id: invitee.userId, email: null, role: 'moderator' });
  const notes = await api(t, 'GET', '/notifications', { token: invitee.accessToken });
  expect(notes.body.data[0]).toMatchObject({ type: 'invite', data: { inviteId: res.body.data.id, accountId: owner.accountId } });
});

test('exactly one of user_id and email', async () => {
  const owner = await devLogin(t, address());
  const both = await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { email: address(), user_id: owner.userId, role: 'viewer' } });
  expect([both.status, both.body]).toEqual([400, { error: 'VALIDATION_ERROR', message: 'Exactly one of user_id or email is required' }]);
  const neither = await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { role: 'viewer' } });
  expect([neither.status, neither.body]).toEqual([400, { error: 'VALIDATION_ERROR', message: 'Exactly one of user_id or email is required' }]);
  const g = await gql(t.url, 'mutation { createAccountInvite(input: { role: "viewer" }) { id } }', {}, { authorization: `Bearer ${owner.accessToken}` });
  expect(g.body.errors?.[0]).toMatchObject({ message: 'Exactly one of user_id or email is required', extensions: { code: 'VALIDATION_ERROR' } });
  const bad = await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { email: 'not-an-address', role: 'viewer' } });
  expect(bad.status).toBe(400);
  expect((await api(t, 'GET', '/account/invites', { token: owner.accessToken })).body.data).toEqual([]);
});

test('an unknown address is mailed a link; whoever signs in with it accepts and joins (REST)', async () => {
  const owner = await devLogin(t, address(), 'Inviting Owner');
  const to = address();
  const res = await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { email: to, role: 'moderator' } });
  expect(res.status).toBe(201);
  expect(res.body.data).toMatchObject({ user_id: null, email: to, role: 'moderator', invited_by: owner.userId });
  const again = await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { email: to, role: 'viewer' } });
  expect([again.status, again.body]).toEqual([409, { error: 'CONFLICT', message: 'User is already invited' }]);

  await waitFor(() => Boolean(mailTo(to)));
  const mail = mailTo(to)!;
  expect(mail.parsed.subject).toBe("You are invited to join Inviting Owner's account");
  expect(mail.parsed.text).toContain("Inviting Owner invited you to join Inviting Owner's account as moderator.");
  const token = tokenIn(mail.parsed.text ?? '')!;
  expect(mail.parsed.text).toContain(`https://dash.example.test/invites/accept?token=${token}`);
  // The token is in no column in clear.
  const row = await t.app.db.knex('account_invites').where({ id: res.body.data.id }).first();
  expect(JSON.stringify(row)).not.toContain(token);

  const unknown = await api(t, 'POST', '/account/invites/accept', { token: owner.accessToken, body: { token: 'nope' } });
  expect([unknown.status, unknown.body]).toEqual([404, { error: 'NOT_FOUND', message: 'Invite not found' }]);
  // The owner is already a member of the account.
  const member = await api(t, 'POST', '/account/invites/accept', { token: owner.accessToken, body: { token } });
  expect([member.status, member.body]).toEqual([409, { error: 'CONFLICT', message: 'User is already a member' }]);

  const newcomer = await devLogin(t, address());
  const accepted = await api(t, 'POST', '/account/invites/accept', { token: newcomer.accessToken, body: { token } });
  expect(accepted.status).toBe(200);
  expect(accepted.body.data).toMatchObject({ id: owner.accountId, role: 'moderator' });
  const members = await api(t, 'GET', '/account/members', { token: owner.accessToken });
  expect(members.body.data.map((m: { user_id: string; role: string }) => [m.user_id, m.role])).toContainEqual([newcomer.userId, 'moderator']);
  const used = await api(t, 'POST', '/account/invites/accept', { token: newcomer.accessToken, body: { token } });
  expect(used.status).toBe(404);
  expect((await api(t, 'GET', '/account/invites', { token: owner.accessToken })).body.data).toEqual([]);
});

test('a user who signs up with the address finds the invite in their notifications, or accepts by GraphQL', async () => {
  const owner = await devLogin(t, address());
  const to = address();
  expect((await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { email: to, role: 'viewer' } })).status).toBe(201);
  await waitFor(() => Boolean(mailTo(to)));
  const token = tokenIn(mailTo(to)!.parsed.text ?? '')!;

  const signedUp = await devLogin(t, to);
  const notes = await api(t, 'GET', '/notifications', { token: signedUp.accessToken });
  const invite = (notes.body.data as { type: string; data: { accountId: string } }[]).find((n) => n.type === 'invite');
  expect(invite?.data.accountId).toBe(owner.accountId);
  const listed = await api(t, 'GET', '/account/invites', { token: owner.accessToken });
  expect(listed.body.data[0]).toMatchObject({ user_id: signedUp.userId, email: to });

  // Someone else can no longer take it; its user can, over GraphQL, and the notification goes.
  const other = await devLogin(t, address());
  const taken = await gql(t.url, 'mutation($t: String!) { acceptAccountInvite(token: $t) { id } }', { t: token }, { authorization: `Bearer ${other.accessToken}` });
  expect(taken.body.errors?.[0]).toMatchObject({ message: 'Invite is no longer valid', extensions: { code: 'CONFLICT' } });
  const g = await gql(t.url, 'mutation($t: String!) { acceptAccountInvite(token: $t) { id role } }', { t: token }, { authorization: `Bearer ${signedUp.accessToken}` });
  expect(g.body.data!.acceptAccountInvite).toEqual({ id: owner.accountId, role: 'viewer' });
  const after = await api(t, 'GET', '/notifications', { token: signedUp.accessToken });
  expect((after.body.data as { type: string }[]).some((n) => n.type === 'invite')).toBe(false);
});
