/**
 * Comment bodies (Part 2, "Ideas board": sanitized HTML; mentions are `span` elements with class
 * `mention` and a UUID `data-mention-id`). sanitize-html does the work: a small formatting
 * allow-list, links limited to http, https and mailto with `rel` forced, and spans kept only in
 * exactly the mention form (any other span loses its tag and keeps its text). Scripts, styles,
 * event handlers and every other attribute go.
 */
import sanitizeHtml from 'sanitize-html';
import { UUID_RE } from '../../infra/ids';

const isMention = (attribs: Record<string, string>) => attribs.class === 'mention' && UUID_RE.test(attribs['data-mention-id'] ?? '');

const OPTIONS: sanitizeHtml.IOptions = {
  allowedTags: ['p', 'br', 'b', 'strong', 'i', 'em', 'u', 's', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li', 'a', 'span'],
  allowedAttributes: { a: ['href', 'rel'], span: ['class', 'data-mention-id'] },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowProtocolRelative: false,
  disallowedTagsMode: 'discard',
  transformTags: {
    span: (_tag, attribs) => {
      const classes = (attribs.class ?? '').split(/\s+/);
      const id = attribs['data-mention-id'] ?? '';
      const kept: Record<string, string> = classes.includes('mention') && UUID_RE.test(id) ? { class: 'mention', 'data-mention-id': id.toLowerCase() } : {};
      return { tagName: 'span', attribs: kept };
    },
    a: (_tag, attribs) => ({ tagName: 'a', attribs: { ...(attribs.href ? { href: attribs.href } : {}), rel: 'nofollow noopener noreferrer' } }),
  },
  // A span that is not exactly a mention loses its tag; its text stays.
  exclusiveFilter: (frame) => (frame.tag === 'span' && !isMention(frame.attribs) ? 'excludeTag' : false),
};

export interface SanitizedBody {
  html: string;
  /** The mentioned user ids, in order of first appearance. */
  mentions: string[];
  /** Whether any text is left (a body of only markup counts as empty). */
  hasText: boolean;
}

export function sanitizeCommentBody(input: string): SanitizedBody {
  const html = sanitizeHtml(input, OPTIONS).trim();
  const mentions: string[] = [];
  for (const match of html.matchAll(/<span class="mention" data-mention-id="([0-9a-f-]{36})">/g)) {
    if (!mentions.includes(match[1]!)) mentions.push(match[1]!);
  }
  const text = sanitizeHtml(html, { allowedTags: [], allowedAttributes: {} }).trim();
  return { html, mentions, hasText: text.length > 0 };
}
