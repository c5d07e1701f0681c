/**
 * Mail delivery end to end against a real SMTP server (smtp-server, in-process on a
 * loopback port): an account invite, a developer application decision and a limit-request
 * decision arrive with the right recipient, subject and body; a server that answers 4xx gets the
 * message on a retry; an outage delays mail and loses none; a 5xx or too many refusals leave a
 * failed row with its last error for operators (GET /v1/admin/mail/outbox, admin `mail:read`);
 * user input with HTML and CR/LF arrives escaped with no extra header; a node that died
 * mid-send leaves the row to be retried; preferences decide (off / in_app / email / locked).
 * Runs on both stores.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createSecretBox } from '../../../src/auth/secrets';
import { startTestApp, type TestApp } from '../../helpers/app';
import { smtpMailConfig, startTestSmtp, waitFor, type ReceivedMail, type TestSmtp } from '../../helpers/smtp';
import { api, devLogin, type LoggedIn } from '../../helpers/users';

type Json = Record<string, any>;

const operatorEmail = `mail-operator-${randomUUID()}@example.test`;
let smtp: TestSmtp;
let t: TestApp;
let operator: LoggedIn;
/** A known key, so rows written by the test are sealed as the mail module seals them. */
const mailKey = { id: 'mail-test', key: randomBytes(32).toString('base64') };
const box = createSecretBox([mailKey]);

const slug = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;
const to = (address: string) => (m: ReceivedMail) => m.envelopeTo.includes(address);
const outboxRows = (userId: string) => t.app.db.knex('mail_outbox').where({ user_id: userId }).orderBy('created_at');
/** The server has the message a moment before the worker records it as sent: wait for that too. */
const settled = (userIds: string[]) => waitFor(async () => (await t.app.db.knex('mail_outbox').whereIn('user_id', userIds).whereNot('status', 'sent')).length === 0);

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${t.metricsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

async function becomeDeveloper(user: LoggedIn): Promise<void> {
  const applied = await api(t, 'POST', '/developer/application', {
    token: user.accessToken,
    body: { application_type: 'solo', display_name: 'Studio', slug: slug('dev'), description: 'Builds things', motivation: 'Fun', what_to_build: 'Bots' },
  });
  expect(applied.status).toBe(201);
  expect((await api(t, 'POST', `/admin/developer-applications/${(applied.body.data as Json).id}/approve`, { token: operator.accessToken, body: {} })).status).toBe(200);
}

beforeAll(async () => {
  smtp = await startTestSmtp();
  t = await startTestApp({
    rate_limits: { enabled: false },
    log: { level: 'silent' },
    auth: { bootstrap_admins: [operatorEmail] },
    secrets: { encryption_keys: [mailKey] },
    jobs: { poll_interval_ms: 500 },
    mail: smtpMailConfig(smtp.port, 4),
  });
  operator = await devLogin(t, operatorEmail);
});

afterAll(async () => {
  await t?.stop();
  await smtp?.close();
});

afterEach(() => {
  smtp.refuse = null;
});

describe('mail that arrives', () => {
  test('an account invite: to the invitee, with the account name and role, greeting by display name, a link from mail.link_base', async () => {
    const owner = await devLogin(t, `owner-${randomUUID()}@example.test`, 'Olive Owner');
    const invitee = await devLogin(t, `invitee-${randomUUID()}@example.test`, 'Ivy Invitee');
    const account = (await api(t, 'GET', '/account', { token: owner.accessToken })).body.data as Json;
    const res = await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { user_id: invitee.userId, role: 'moderator' } });
    expect(res.status).toBe(201);
    await waitFor(() => smtp.received.some(to(invitee.email)));
    const mails = smtp.received.filter(to(invitee.email));
    expect(mails).toHaveLength(1);
    const mail = mails[0]!.parsed;
    expect(mail.subject).toBe(`You are invited to join ${account.name}`);
    expect(mail.from?.value).toEqual([{ address: 'no-reply@example.test', name: 'Creator Backend' }]);
    expect((mail.to as { value: { address: string; name: string }[] }).value).toEqual([{ address: invitee.email, name: 'Ivy Invitee' }]);
    expect(mail.text).toContain('Hello Ivy Invitee,');
    expect(mail.text).toContain(`You are invited to join ${account.name} as moderator.`);
    expect(mail.text).toContain('https://dash.example.test/notifications');
    expect(mail.html).toContain('<a href="https://dash.example.test/notifications">');
    // The invite is locked on in_app_email: the in-app row exists too.
    const notes = (await api(t, 'GET', '/notifications', { token: invitee.accessToken })).body.data as Json[];
    expect(notes.filter((n) => n.type === 'invite')).toHaveLength(1);
    await settled([invitee.userId]);
    const [row] = await outboxRows(invitee.userId);
    expect(row).toMatchObject({ status: 'sent', attempts: 1, kind: 'invite', last_error: null });
    expect(row.message_id).toBe(mail.messageId);
  });

  test('a developer application decision (approve and reject), with the reviewer notes', async () => {
    const applicant = await devLogin(t, `applicant-${randomUUID()}@example.test`, 'Ada Applicant');
    const body = { application_type: 'solo', display_name: 'Ada Studio', slug: slug('ada'), description: 'Overlays', motivation: 'Fun', what_to_build: 'Widgets' };
    const first = await api(t, 'POST', '/developer/application', { token: applicant.accessToken, body });
    expect((await api(t, 'POST', `/admin/developer-applications/${(first.body.data as Json).id}/reject`, { token: operator.accessToken, body: { notes: 'Tell us more.' } })).status).toBe(200);
    await waitFor(() => smtp.received.some(to(applicant.email)));
    const rejected = smtp.received.filter(to(applicant.email));
    expect(rejected.map((m) => m.parsed.subject)).toEqual(['Your developer application was not approved']);
    expect(rejected[0]!.parsed.text).toContain('Your developer application for "Ada Studio" was not approved.');
    expect(rejected[0]!.parsed.text).toContain('Notes from the reviewer: Tell us more.');

    const second = await api(t, 'POST', '/developer/application', { token: applicant.accessToken, body: { ...body, slug: slug('ada') } });
    expect((await api(t, 'POST', `/admin/developer-applications/${(second.body.data as Json).id}/approve`, { token: operator.accessToken, body: { notes: 'Welcome' } })).status).toBe(200);
    await waitFor(() => smtp.received.filter(to(applicant.email)).length === 2);
    const approved = smtp.received.filter(to(applicant.email))[1]!.parsed;
    expect(approved.subject).toBe('Your developer application was approved');
    expect(approved.text).toContain('Welcome to the developer portal.');
    expect(approved.text).toContain('https://dash.example.test/developer');
  });

  test('a limit-request decision reaches the developer who asked', async () => {
    const dev = await devLogin(t, `limits-${randomUUID()}@example.test`, 'Lim Dev');
    await becomeDeveloper(dev);
    const ext = await api(t, 'POST', '/developer/extensions', { token: dev.accessToken, body: { name: 'Soundboard <b>Pro</b>', slug: slug('ext') } });
    expect(ext.status).toBe(201);
    const created = await api(t, 'POST', '/developer/limits/requests', { token: dev.accessToken, body: { extension_id: (ext.body.data as Json).id, requested_limits: { max_sounds: 250 }, reason: 'More' } });
    expect(created.status).toBe(201);
    const decided = await api(t, 'PUT', `/admin/limit-requests/${(created.body.data as Json).id}`, { token: operator.accessToken, body: { action: 'approve', notes: 'ok' } });
    expect(decided.status).toBe(200);
    await waitFor(() => smtp.received.some((m) => to(dev.email)(m) && m.parsed.subject!.startsWith('Your limit request')));
    const mail = smtp.received.filter((m) => to(dev.email)(m) && m.parsed.subject!.startsWith('Your limit request'));
    expect(mail).toHaveLength(1);
    expect(mail[0]!.parsed.subject).toBe('Your limit request for Soundboard <b>Pro</b> was approved');
    expect(mail[0]!.parsed.html).toContain('Soundboard &lt;b&gt;Pro&lt;/b&gt;');
    expect(mail[0]!.parsed.html).not.toContain('<b>Pro');
    const notes = (await api(t, 'GET', '/notifications', { token: dev.accessToken })).body.data as Json[];
    expect(notes.find((n) => n.type === 'limit_request')).toMatchObject({ data: { status: 'approved', notes: 'ok' } });
  });

  test('HTML and header injection in a display name and an account name arrive escaped, with no extra header', async () => {
    const owner = await devLogin(t, `inj-owner-${randomUUID()}@example.test`);
    const victim = await devLogin(t, `inj-${randomUUID()}@example.test`);
    const hostileName = 'Eve\r\nBcc: stolen@example.test\r\nX-Injected: yes';
    const hostileAccount = '<script>alert(1)</script>\r\nX-Injected: account\r\n\r\nbody?';
    await t.app.db.knex('users').where({ id: victim.userId }).update({ display_name: hostileName });
    await t.app.db.knex('accounts').where({ id: owner.accountId }).update({ name: hostileAccount });
    expect((await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { user_id: victim.userId, role: 'moderator' } })).status).toBe(201);
    await waitFor(() => smtp.received.some(to(victim.email)));
    const [mail] = smtp.received.filter(to(victim.email));
    expect(mail!.envelopeTo).toEqual([victim.email]);
    expect(smtp.received.some(to('stolen@example.test'))).toBe(false);
    const headerBlock = mail!.raw.slice(0, mail!.raw.indexOf('\r\n\r\n'));
    expect(headerBlock).not.toMatch(/^(bcc|x-injected):/im);
    expect(mail!.parsed.headers.has('bcc')).toBe(false);
    expect(mail!.parsed.headers.has('x-injected')).toBe(false);
    expect(mail!.parsed.subject).toBe('You are invited to join <script>alert(1)</script> X-Injected: account body?');
    expect((mail!.parsed.to as { value: { address: string; name: string }[] }).value).toEqual([{ address: victim.email, name: 'Eve Bcc: stolen@example.test X-Injected: yes' }]);
    expect(mail!.parsed.html).not.toContain('<script>');
    expect(mail!.parsed.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(mail!.parsed.text).toContain('<script>alert(1)</script>');
  });
});

describe('delivery that fails for a while', () => {
  test('a server that answers 4xx twice gets the message on the third try; the retries are counted', async () => {
    const user = await devLogin(t, `retry-${randomUUID()}@example.test`);
    const retriedBefore = await metric('svc_mail_retried_total');
    let refusals = 0;
    smtp.refuse = () => (refusals++ < 2 ? 451 : null);
    await t.app.modules.notifications.notify({ userId: user.userId, type: 'developer_verification', data: { status: 'verified' } });
    await waitFor(() => smtp.received.some(to(user.email)));
    expect(smtp.received.filter(to(user.email))).toHaveLength(1);
    await settled([user.userId]);
    const [row] = await outboxRows(user.userId);
    expect(row).toMatchObject({ status: 'sent', attempts: 3, last_error: null });
    expect(await metric('svc_mail_retried_total')).toBeGreaterThanOrEqual(retriedBefore + 2);
    expect(await metric('svc_mail_sent_total')).toBeGreaterThan(0);
  });

  test('an outage: every message queued while the server is down arrives once when it returns', async () => {
    const users = await Promise.all([1, 2, 3, 4, 5].map((i) => devLogin(t, `outage-${i}-${randomUUID()}@example.test`)));
    await smtp.down();
    try {
      for (const user of users) await t.app.modules.notifications.notify({ userId: user.userId, type: 'developer_verification', data: { status: 'verified' } });
      // Every message was tried and failed against the closed port, and stays due for a retry.
      await waitFor(async () => (await t.app.db.knex('mail_outbox').whereIn('user_id', users.map((u) => u.userId)).whereNotNull('last_error').where('status', 'pending')).length === users.length);
    } finally {
      await smtp.up();
    }
    await waitFor(() => users.every((u) => smtp.received.some(to(u.email))));
    for (const user of users) expect(smtp.received.filter(to(user.email))).toHaveLength(1);
    await settled(users.map((u) => u.userId));
    const rows = await t.app.db.knex('mail_outbox').whereIn('user_id', users.map((u) => u.userId));
    expect(rows.map((r) => r.status)).toEqual(users.map(() => 'sent'));
    expect(rows.every((r) => r.attempts >= 2)).toBe(true);
  });

  test('out of tries (4xx every time) or refused for good (5xx): failed, with the last error, listed for operators', async () => {
    const busy = await devLogin(t, `busy-${randomUUID()}@example.test`);
    const refused = await devLogin(t, `refused-${randomUUID()}@example.test`);
    smtp.refuse = () => 452;
    await t.app.modules.notifications.notify({ userId: busy.userId, type: 'developer_verification', data: { status: 'verified' } });
    await waitFor(async () => (await outboxRows(busy.userId))[0]?.status === 'failed');
    smtp.refuse = () => 550;
    await t.app.modules.notifications.notify({ userId: refused.userId, type: 'developer_verification', data: { status: 'verified' } });
    await waitFor(async () => (await outboxRows(refused.userId))[0]?.status === 'failed');
    const [busyRow] = await outboxRows(busy.userId);
    const [refusedRow] = await outboxRows(refused.userId);
    expect(busyRow).toMatchObject({ attempts: 4, max_attempts: 4 });
    expect(busyRow.last_error).toContain('452');
    expect(refusedRow).toMatchObject({ attempts: 1 });
    expect(refusedRow.last_error).toContain('550');
    expect(smtp.received.some(to(busy.email))).toBe(false);

    const listed = await api(t, 'GET', '/admin/mail/outbox', { token: operator.accessToken, query: { status: 'failed', limit: '100' } });
    expect(listed.status).toBe(200);
    const items = listed.body.data as Json[];
    expect(items.find((i) => i.id === busyRow.id)).toEqual({
      id: busyRow.id,
      kind: 'developer_verification',
      user_id: busy.userId,
      to: busy.email,
      subject: 'Your developer verification is approved',
      status: 'failed',
      attempts: 4,
      max_attempts: 4,
      next_attempt_at: expect.any(String),
      last_error: expect.stringContaining('452'),
      message_id: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      sent_at: null,
    });
    expect(items.some((i) => i.id === refusedRow.id)).toBe(true);
    expect((listed.body._meta as Json).total).toBeGreaterThanOrEqual(2);
    // Without a status: what is pending, sending or failed; never what was sent.
    const open = (await api(t, 'GET', '/admin/mail/outbox', { token: operator.accessToken, query: { limit: '100' } })).body.data as Json[];
    expect(open.every((i) => ['pending', 'sending', 'failed'].includes(i.status))).toBe(true);
    expect(open.some((i) => i.id === busyRow.id)).toBe(true);
    expect(await metric('svc_mail_failed_total')).toBeGreaterThanOrEqual(2);
  });

  test('a node that died mid-send: its hold expires and the row is sent; with no try left it is failed', async () => {
    const user = await devLogin(t, `crash-${randomUUID()}@example.test`);
    const last = await devLogin(t, `crash-last-${randomUUID()}@example.test`);
    // Rows as a node leaves them when it dies while sending: held by it, the hold run out.
    const held = (u: LoggedIn, attempts: number) => ({
      id: randomUUID(),
      kind: 'developer_verification',
      user_id: u.userId,
      to_address: u.email,
      to_name: null,
      subject: 'Your developer verification is approved',
      text_body: box.seal('Approved.'),
      html_body: box.seal('<p>Approved.</p>'),
      status: 'sending',
      attempts,
      max_attempts: 4,
      locked_by: 'a-node-that-died',
      locked_until: new Date(Date.now() - 1000),
    });
    await t.app.db.knex('mail_outbox').insert([held(user, 1), held(last, 4)]);
    await t.app.modules.mail.sweep();
    await waitFor(() => smtp.received.some(to(user.email)));
    await settled([user.userId]);
    expect((await outboxRows(user.userId))[0]).toMatchObject({ status: 'sent', attempts: 2 });
    expect((await outboxRows(last.userId))[0]).toMatchObject({ status: 'failed', attempts: 4 });
    expect(smtp.received.some(to(last.email))).toBe(false);
  });
});

describe('preferences decide', () => {
  const notify = (userId: string, type: string) => t.app.modules.notifications.notify({ userId, type, data: { status: 'verified' } });
  const inApp = async (user: LoggedIn, type: string) => ((await api(t, 'GET', '/notifications', { token: user.accessToken })).body.data as Json[]).filter((n) => n.type === type).length;
  const queued = async (user: LoggedIn, type: string) => (await t.app.db.knex('mail_outbox').where({ user_id: user.userId, kind: type })).length;
  const prefer = async (user: LoggedIn, type: string, channel: string) =>
    expect((await api(t, 'PATCH', `/notifications/preferences/${type}`, { token: user.accessToken, body: { channel } })).status).toBe(200);

  test('off writes nothing, in_app only the notification, email only the mail, in_app_email both; the default of a mailed type is both', async () => {
    const type = 'developer_verification';
    const cases: [string | null, number, number][] = [
      [null, 1, 1],
      ['off', 0, 0],
      ['in_app', 1, 0],
      ['email', 0, 1],
      ['in_app_email', 1, 1],
    ];
    for (const [channel, notes, mails] of cases) {
      const user = await devLogin(t, `pref-${channel ?? 'default'}-${randomUUID()}@example.test`);
      if (channel) await prefer(user, type, channel);
      await notify(user.userId, type);
      expect({ channel, notes: await inApp(user, type), mails: await queued(user, type) }).toEqual({ channel, notes, mails });
      if (mails) await waitFor(() => smtp.received.some(to(user.email)));
      else expect(smtp.received.some(to(user.email))).toBe(false);
    }
  });

  test('a type that is in-app by default sends no mail until the user asks for it', async () => {
    const user = await devLogin(t, `pref-member-${randomUUID()}@example.test`);
    await notify(user.userId, 'member_joined');
    expect([await inApp(user, 'member_joined'), await queued(user, 'member_joined')]).toEqual([1, 0]);
    await prefer(user, 'member_joined', 'in_app_email');
    await notify(user.userId, 'member_joined');
    expect([await inApp(user, 'member_joined'), await queued(user, 'member_joined')]).toEqual([2, 1]);
  });

  test('the locked invite cannot be turned off and is always delivered in-app and by mail', async () => {
    const owner = await devLogin(t, `lock-owner-${randomUUID()}@example.test`);
    const user = await devLogin(t, `lock-${randomUUID()}@example.test`);
    const refused = await api(t, 'PATCH', '/notifications/preferences/invite', { token: user.accessToken, body: { channel: 'off' } });
    expect(refused.status).toBe(400);
    // Even a stored row (written past the API) does not change a locked type.
    await t.app.db.knex('notification_preferences').insert({ user_id: user.userId, type: 'invite', channel: 'off' });
    expect((await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { user_id: user.userId, role: 'moderator' } })).status).toBe(201);
    expect([await inApp(user, 'invite'), await queued(user, 'invite')]).toEqual([1, 1]);
    await waitFor(() => smtp.received.some(to(user.email)));
  });

  test('a decision the user chose to get by mail only: no in-app row, one mail', async () => {
    const applicant = await devLogin(t, `pref-app-${randomUUID()}@example.test`);
    await prefer(applicant, 'developer_application', 'email');
    const body = { application_type: 'solo', display_name: 'Mail Only', slug: slug('mo'), description: 'x', motivation: 'y', what_to_build: 'z' };
    const app = await api(t, 'POST', '/developer/application', { token: applicant.accessToken, body });
    expect((await api(t, 'POST', `/admin/developer-applications/${(app.body.data as Json).id}/reject`, { token: operator.accessToken, body: { notes: 'No' } })).status).toBe(200);
    expect(await inApp(applicant, 'developer_application')).toBe(0);
    await waitFor(() => smtp.received.some(to(applicant.email)));
    expect(smtp.received.filter(to(applicant.email))).toHaveLength(1);
  });
});

describe('GET /v1/admin/mail/outbox', () => {
  test('needs the admin mail:read; anonymous is 401; a bad status is 400', async () => {
    const user = await devLogin(t);
    expect(await api(t, 'GET', '/admin/mail/outbox', { token: user.accessToken })).toMatchObject({ status: 403, body: { error: 'FORBIDDEN', message: 'Missing permission: mail:read' } });
    expect((await api(t, 'GET', '/admin/mail/outbox')).status).toBe(401);
    expect((await api(t, 'GET', '/admin/mail/outbox', { token: operator.accessToken, query: { status: 'lost' } })).status).toBe(400);
    const catalogue = await api(t, 'GET', '/admin/admin-permissions', { token: operator.accessToken });
    expect((catalogue.body.data as Json[]).some((p) => p.permission === 'mail:read')).toBe(true);
  });
});
