/**
 * Developer-team invites by mail against a real SMTP server (smtp-server, in-process on
 * a loopback port): POST /v1/developer/teams/{id}/invites with `email` mails the invite (team
 * name, inviter's display name, an accept link from mail.link_base carrying the code); the outbox
 * row holds the code in no column in clear (bodies are sealed, src/auth/secrets.ts) and the
 * operator listing shows no body; without `email` nothing is mailed; a bad address is a 400 that
 * writes nothing; a body sealed under a key the node does not have fails at once. Both stores.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createSecretBox } from '../../../src/auth/secrets';
import { startTestApp, type TestApp } from '../../helpers/app';
import { smtpMailConfig, startTestSmtp, waitFor, type TestSmtp } from '../../helpers/smtp';
import { api, devLogin, type LoggedIn } from '../../helpers/users';

type Json = Record<string, any>;

const operatorEmail = `team-mail-operator-${randomUUID()}@example.test`;
const mailKey = { id: 'team-mail-test', key: randomBytes(32).toString('base64') };
const box = createSecretBox([mailKey]);
let smtp: TestSmtp;
let t: TestApp;
let operator: LoggedIn;

const slug = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;
/** Outbox rows whose subject names the team (team names are unique per test). */
const rowsFor = (teamName: string) => t.app.db.knex('mail_outbox').where({ kind: 'team_invite' }).whereLike('subject', `%${teamName}%`);
const mailsFor = (teamName: string) => smtp.received.filter((m) => (m.parsed.subject ?? '').includes(teamName));

/** An approved developer owning a new team with a unique name. */
async function teamOwner(displayName: string): Promise<{ owner: LoggedIn; team: Json }> {
  const owner = await devLogin(t, `team-owner-${randomUUID()}@example.test`, displayName);
  const applied = await api(t, 'POST', '/developer/application', {
    token: owner.accessToken,
    body: { application_type: 'solo', display_name: 'Studio', slug: slug('dev'), description: 'Builds things', motivation: 'Fun', what_to_build: 'Bots' },
  });
  expect(applied.status).toBe(201);
  expect((await api(t, 'POST', `/admin/developer-applications/${(applied.body.data as Json).id}/approve`, { token: operator.accessToken, body: {} })).status).toBe(200);
  const created = await api(t, 'POST', '/developer/teams', { token: owner.accessToken, body: { name: `Team ${randomUUID().slice(0, 8)}`, slug: slug('team') } });
  expect(created.status).toBe(201);
  return { owner, team: created.body.data as Json };
}

beforeAll(async () => {
  smtp = await startTestSmtp();
  t = await startTestApp({
    rate_limits: { enabled: false },
    log: { level: 'silent' },
    auth: { bootstrap_admins: [operatorEmail] },
    secrets: { encryption_keys: [mailKey] },
    jobs: { poll_interval_ms: 500 },
    mail: smtpMailConfig(smtp.port, 3),
  });
  operator = await devLogin(t, operatorEmail);
});

afterAll(async () => {
  await t?.stop();
  await smtp?.close();
});

describe('developer-team invites by mail', () => {
  test('with email: the invite arrives with team, inviter and an accept link carrying the code; no column holds the code in clear', async () => {
    const { owner, team } = await teamOwner('Tess Owner');
    const invitee = `guest-${randomUUID()}@example.test`;
    const res = await api(t, 'POST', `/developer/teams/${team.id}/invites`, { token: owner.accessToken, body: { email: invitee } });
    expect(res.status).toBe(201);
    const code = (res.body.data as Json).code as string;
    expect(code).toMatch(/^[0-9a-f]{32}$/);

    await waitFor(() => smtp.received.some((m) => m.envelopeTo.includes(invitee)));
    const mails = smtp.received.filter((m) => m.envelopeTo.includes(invitee));
    expect(mails).toHaveLength(1);
    const mail = mails[0]!.parsed;
    const link = `https://dash.example.test/developer/team-invites/${code}`;
    expect(mail.subject).toBe(`You are invited to join the developer team ${team.name}`);
    expect((mail.to as { value: { address: string }[] }).value.map((v) => v.address)).toEqual([invitee]);
    expect(mail.text).toContain(`Tess Owner invited you to join the developer team ${team.name} as team-member.`);
    expect(mail.text).toContain(`Your invite code: ${code}`);
    expect(mail.text).toContain(`Accept the invite: ${link}`);
    expect(mail.html).toContain(`<a href="${link}">Accept the invite</a>`);
    // The mailed code is the one that works.
    expect((await api(t, 'GET', `/developer/team-invites/${code}`, { token: owner.accessToken })).body.data).toMatchObject({ team_id: team.id });

    await waitFor(async () => (await rowsFor(team.name).where({ status: 'sent' })).length === 1);
    const rows = await rowsFor(team.name);
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row).toMatchObject({ to_address: invitee, status: 'sent', user_id: null });
    // Nothing in the row, in any column, carries the code in clear; the bodies are sealed text.
    expect(JSON.stringify(row)).not.toContain(code);
    expect(JSON.stringify(row)).not.toContain(code.slice(8));
    expect(row.text_body).toMatch(/^v1\.team-mail-test\./);
    expect(row.html_body).toMatch(/^v1\.team-mail-test\./);
    // ...and they are the message that was sent, opened with the key.
    expect(box.open(row.text_body)).toContain(`Your invite code: ${code}`);

    // The operator listing shows the row without any body.
    const listed = await api(t, 'GET', '/admin/mail/outbox?status=sent&limit=100', { token: operator.accessToken });
    expect(listed.status).toBe(200);
    const item = (listed.body.data as Json[]).find((i) => i.id === row.id);
    expect(item).toBeDefined();
    expect(Object.keys(item!).filter((k) => /body|text|html/.test(k))).toEqual([]);
    expect(JSON.stringify(listed.body)).not.toContain(code);
  });

  test('without email nothing is mailed; a bad address is a 400 and writes no invite', async () => {
    const { owner, team } = await teamOwner('Nia Owner');
    const plain = await api(t, 'POST', `/developer/teams/${team.id}/invites`, { token: owner.accessToken, body: {} });
    expect(plain.status).toBe(201);
    const bad = await api(t, 'POST', `/developer/teams/${team.id}/invites`, { token: owner.accessToken, body: { email: 'not an address' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('VALIDATION_ERROR');
    const tooLong = await api(t, 'POST', `/developer/teams/${team.id}/invites`, { token: owner.accessToken, body: { email: `${'a'.repeat(250)}@x.io` } });
    expect(tooLong.status).toBe(400);
    // A mailed invite after them shows the worker ran; it is the team's only message.
    const invitee = `later-${randomUUID()}@example.test`;
    expect((await api(t, 'POST', `/developer/teams/${team.id}/invites`, { token: owner.accessToken, body: { email: invitee } })).status).toBe(201);
    await waitFor(async () => (await rowsFor(team.name).where({ status: 'sent' })).length === 1);
    expect(await rowsFor(team.name)).toHaveLength(1);
    expect(mailsFor(team.name).map((m) => m.envelopeTo)).toEqual([[invitee]]);
    const invites = (await api(t, 'GET', `/developer/teams/${team.id}/invites`, { token: owner.accessToken })).body.data as Json[];
    expect(invites).toHaveLength(2);
  });

  test('a body sealed under a key this node does not have waits for another try (another node may hold the key), fails on its last, and nothing is sent', async () => {
    const other = createSecretBox([{ id: 'gone', key: randomBytes(32).toString('base64') }]);
    const address = `unopenable-${randomUUID()}@example.test`;
    const id = randomUUID();
    await t.app.db.knex('mail_outbox').insert({
      id,
      kind: 'team_invite',
      user_id: null,
      to_address: address,
      to_name: null,
      subject: 'You are invited',
      text_body: other.seal('Hello'),
      html_body: other.seal('<p>Hello</p>'),
      max_attempts: 2,
    });
    await t.app.modules.mail.sweep();
    const row = await t.app.db.knex('mail_outbox').where({ id }).first();
    expect(row).toMatchObject({ status: 'pending', attempts: 1 });
    expect(row.last_error).toContain('sealed body cannot be opened');
    expect(row.last_error).toContain('names key gone');
    // Due again now: the last try fails it, with its reason, for an operator to re-queue.
    await t.app.db.knex('mail_outbox').where({ id }).update({ next_attempt_at: new Date(Date.now() - 1000) });
    await t.app.modules.mail.sweep();
    const last = await t.app.db.knex('mail_outbox').where({ id }).first();
    expect(last).toMatchObject({ status: 'failed', attempts: 2 });
    expect(last.last_error).toContain('sealed body cannot be opened');
    expect(smtp.received.some((m) => m.envelopeTo.includes(address))).toBe(false);
  });
});
