/**
 * Every message's wording, in one place: a plain-text and an HTML body per kind, greeting the
 * recipient by display name, with links from the configured link base. A template writes plain
 * paragraphs; the HTML is built from them with every character escaped (escape-html), so a value
 * a user typed (an account or application name, review notes, a display name) can never become
 * markup. Subjects and names are made single-line (no CR, LF or other line breaks) before they go
 * near a header.
 */
import escapeHtml from 'escape-html';

export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

export interface TemplateInput {
  /** The recipient's display name (null: no greeting by name). */
  name: string | null;
  /** What the message is about (a notification's data, plus what the sender adds for mail). */
  data: Readonly<Record<string, unknown>>;
  /** `mail.link_base` without a trailing slash. */
  linkBase: string;
}

interface Draft {
  subject: string;
  paragraphs: string[];
  link?: { label: string; path: string };
}

type Template = (data: Readonly<Record<string, unknown>>) => Draft;

/** A header value on one line: line breaks and other control characters become one space. */
export function singleLine(value: string, max = 200): string {
  const flat = value.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

const str = (value: unknown, fallback = ''): string => (typeof value === 'string' && value.trim() ? value.trim() : fallback);
const notes = (data: Readonly<Record<string, unknown>>): string[] => (str(data.notes) ? [`Notes from the reviewer: ${str(data.notes)}`] : []);

const templates: Readonly<Record<string, Template>> = {
  invite: (d) => ({
    subject: `You are invited to join ${str(d.accountName, 'an account')}`,
    paragraphs: [`You are invited to join ${str(d.accountName, 'an account')} as ${str(d.role, 'a member')}.`, 'Open your notifications to accept or decline the invite.'],
    link: { label: 'Open notifications', path: '/notifications' },
  }),
  account_invite: (d) => ({
    subject: `You are invited to join ${str(d.accountName, 'an account')}`,
    paragraphs: [
      str(d.inviterName)
        ? `${str(d.inviterName)} invited you to join ${str(d.accountName, 'an account')} as ${str(d.role, 'a member')}.`
        : `You are invited to join ${str(d.accountName, 'an account')} as ${str(d.role, 'a member')}.`,
      'Sign in, or create your account, and the invite is accepted. It expires in 7 days.',
    ],
    link: { label: 'Accept the invite', path: `/invites/accept?token=${encodeURIComponent(str(d.token))}` },
  }),
  member_joined: (d) => ({
    subject: `${str(d.displayName, 'A new member')} joined ${str(d.accountName, 'your account')}`,
    paragraphs: [`${str(d.displayName, 'A new member')} joined ${str(d.accountName, 'your account')} as ${str(d.role, 'a member')}.`],
    link: { label: 'Open the members', path: '/settings/members' },
  }),
  member_removed: (d) => ({
    subject: `You were removed from ${str(d.accountName, 'an account')}`,
    paragraphs: [`You are no longer a member of ${str(d.accountName, 'an account')}.`],
  }),
  team_invite: (d) => ({
    subject: `You are invited to join the developer team ${str(d.teamName, 'a team')}`,
    paragraphs: [
      str(d.inviterName)
        ? `${str(d.inviterName)} invited you to join the developer team ${str(d.teamName, 'a team')} as ${str(d.role, 'a member')}.`
        : `You are invited to join the developer team ${str(d.teamName, 'a team')} as ${str(d.role, 'a member')}.`,
      `Your invite code: ${str(d.code)}`,
      ...(str(d.expiresAt) ? [`The invite expires at ${str(d.expiresAt)}.`] : []),
    ],
    link: { label: 'Accept the invite', path: `/developer/team-invites/${encodeURIComponent(str(d.code))}` },
  }),
  developer_application: (d) =>
    d.status === 'approved'
      ? {
          subject: 'Your developer application was approved',
          paragraphs: [`Your developer application for "${str(d.displayName, 'your profile')}" was approved. Welcome to the developer portal.`, ...notes(d)],
          link: { label: 'Open the developer portal', path: '/developer' },
        }
      : {
          subject: 'Your developer application was not approved',
          paragraphs: [`Your developer application for "${str(d.displayName, 'your profile')}" was not approved.`, ...notes(d)],
          link: { label: 'Open the developer portal', path: '/developer' },
        },
  developer_verification: (d) =>
    d.status === 'verified'
      ? { subject: 'Your developer verification is approved', paragraphs: ['Your developer verification was approved.', ...notes(d)], link: { label: 'Open the developer portal', path: '/developer' } }
      : {
          subject: 'Your developer verification needs changes',
          paragraphs: ['Your developer verification was not approved. You can correct it and submit it again.', ...notes(d)],
          link: { label: 'Open your verification', path: '/developer/verification' },
        },
  limit_request: (d) => ({
    subject: d.status === 'approved' ? `Your limit request for ${str(d.extensionName, 'your extension')} was approved` : `Your limit request for ${str(d.extensionName, 'your extension')} was not approved`,
    paragraphs: [
      d.status === 'approved'
        ? `Your limit request for ${str(d.extensionName, 'your extension')} was approved; the new limits apply now.`
        : `Your limit request for ${str(d.extensionName, 'your extension')} was not approved.`,
      ...notes(d),
    ],
    link: { label: 'Open your extension', path: '/developer/extensions' },
  }),
  connection_reconnect_required: (d) => ({
    subject: `Reconnect your ${str(d.provider, str(d.platform, 'platform'))} connection`,
    paragraphs: [`Your ${str(d.provider, str(d.platform, 'platform'))} connection stopped working and needs to be connected again.`, 'Until then, what depends on it is paused.'],
    link: { label: 'Open your connections', path: '/settings/connections' },
  }),
};

/** Any other notification type: a pointer to the in-app list. */
const fallback: Template = () => ({ subject: 'You have a new notification', paragraphs: ['Something needs your attention.'], link: { label: 'Open notifications', path: '/notifications' } });

/** Whether a kind has its own wording (others get the generic notice). */
export const hasTemplate = (kind: string): boolean => Object.hasOwn(templates, kind);

/** Renders a kind's message for one recipient. */
export function renderMail(kind: string, input: TemplateInput): RenderedMail {
  const draft = (Object.hasOwn(templates, kind) ? templates[kind]! : fallback)(input.data);
  const name = input.name ? singleLine(input.name, 100) : '';
  const greeting = name ? `Hello ${name},` : 'Hello,';
  const url = draft.link ? `${input.linkBase}${draft.link.path}` : null;
  const text = [greeting, ...draft.paragraphs, ...(url && draft.link ? [`${draft.link.label}: ${url}`] : [])].join('\n\n');
  const html = [
    '<!doctype html><html><body>',
    `<p>${escapeHtml(greeting)}</p>`,
    ...draft.paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`),
    ...(url && draft.link ? [`<p><a href="${escapeHtml(url)}">${escapeHtml(draft.link.label)}</a></p>`] : []),
    '</body></html>',
  ].join('\n');
  return { subject: singleLine(draft.subject), text: `${text}\n`, html: `${html}\n` };
}
