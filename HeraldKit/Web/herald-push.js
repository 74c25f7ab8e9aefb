// Herald's pushes in a browser: checks a push's signature against the app's pinned key with
// WebCrypto Ed25519 (docs/signed-pushes.md, the attached form every Web Push body has) and builds
// the notification a service worker shows. An ES module with no dependency and no build step:
//
//   import { verifiedDocument, notificationFor } from './herald-push.js';
//   const document = await verifiedDocument(new Uint8Array(await event.data.arrayBuffer()), PINNED_KEY);
//   const { title, options } = notificationFor(document);
//   await self.registration.showNotification(title, options);

const MEMBER = '"herald_signature":"';
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Why a push was refused: the same reasons HeraldKit's `PushRejection` gives. */
export class PushRejection extends Error {
  constructor(reason) {
    super(reason);
    this.reason = reason;
  }
}

/** base64url without padding to bytes; a character outside the alphabet is `malformed`. */
export function base64url(text) {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) throw new PushRejection('malformed');
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4);
  const binary = atob(b64);
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

/**
 * The document of a push carrying its signature attached (`…,"herald_signature":"<iat>.<sig>"}`),
 * checked against `pinnedKey` (the app's Ed25519 public key, base64url) and the issue time's window:
 * at most `window` seconds old (a day), at most five minutes ahead. Throws a `PushRejection`:
 * `unsigned`, `malformed`, `badSignature`, `stale` or `fromTheFuture`.
 */
export async function verifiedDocument(bytes, pinnedKey, { now = Math.floor(Date.now() / 1000), window = 86400 } = {}) {
  const payload = bytes instanceof Uint8Array ? bytes : encoder.encode(String(bytes));
  // The signature is the last member: cut off by bytes, never by parsing and re-encoding.
  const at = lastIndexOf(payload, MEMBER);
  const match = at < 0 ? null : /^(0|[1-9][0-9]{0,17})\.([^"]*)"\}$/.exec(decoder.decode(payload.subarray(at + MEMBER.length)));
  if (!match) throw new PushRejection('unsigned');
  const head = payload.subarray(0, at);
  const trimmed = head.length > 0 && head[head.length - 1] === 0x2c ? head.subarray(0, head.length - 1) : head;
  const document = concat(trimmed, [0x7d]); // "}"
  const raw = base64url(pinnedKey);
  const signature = base64url(match[2]);
  if (raw.length !== 32) throw new PushRejection('malformed');
  if (signature.length !== 64) throw new PushRejection('badSignature');
  const key = await crypto.subtle.importKey('raw', raw, { name: 'Ed25519' }, false, ['verify']);
  const signed = concat(encoder.encode(`herald-push-v1\n${match[1]}\n`), document);
  if (!(await crypto.subtle.verify({ name: 'Ed25519' }, key, signature, signed))) throw new PushRejection('badSignature');
  const issuedAt = BigInt(match[1]);
  if (issuedAt > BigInt(now) + 300n) throw new PushRejection('fromTheFuture');
  if (BigInt(now) - issuedAt > BigInt(window)) throw new PushRejection('stale');
  return document;
}

function lastIndexOf(bytes, text) {
  const needle = encoder.encode(text);
  outer: for (let i = bytes.length - needle.length; i >= 0; i--) {
    for (let j = 0; j < needle.length; j++) if (bytes[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

function concat(a, b) {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** Kasia's categories and their actions, as HeraldKit's `NotificationCategory.kasiaSet` names them. */
export const categories = {
  'kasia.message': [{ action: 'herald.reply', title: 'Reply', type: 'text', placeholder: 'Message' }, { action: 'herald.mark-read', title: 'Mark as Read' }],
  'kasia.handshake': [{ action: 'herald.accept', title: 'Accept' }, { action: 'herald.decline', title: 'Decline' }],
  'kasia.payment': [{ action: 'herald.open', title: 'Open' }],
};

/**
 * What a service worker shows for a document (`Uint8Array` or parsed): the alert's title and
 * body, one notification per conversation (`tag`: its thread id, else the Kasia sender, else the
 * transaction), the category's actions, silence for `sound: "none"`, and the document as `data`;
 * `badgeCount` is for `navigator.setAppBadge`. A push that is not a JSON object shows `genericText`.
 */
export function notificationFor(document, { genericText = 'New message' } = {}) {
  let push;
  try {
    push = document instanceof Uint8Array ? JSON.parse(decoder.decode(document)) : document;
  } catch (e) {
    push = undefined;
  }
  if (typeof push !== 'object' || push === null || Array.isArray(push)) push = {};
  const object = (value) => (typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {});
  const text = (value) => (typeof value === 'string' ? value : undefined);
  const aps = object(push.aps);
  const kasia = object(push.kasia);
  const alert = typeof aps.alert === 'string' ? { body: aps.alert } : object(aps.alert);
  const title = text(alert.title) || genericText;
  const options = { body: text(alert.body) || '', data: push };
  const tag = text(aps['thread-id']) || text(kasia.sender) || text(kasia.txId);
  if (tag) options.tag = tag;
  const actions = categories[text(aps.category)];
  if (actions) options.actions = actions;
  if (aps.sound === 'none') options.silent = true;
  const badgeCount = Number.isInteger(aps.badge) && aps.badge >= 0 ? aps.badge : undefined;
  return { title, options, badgeCount };
}

/**
 * The dismissals a verified document carries (a conversation read on another device up to a
 * position): a `dismiss` document's own `{conversation, up_to}` and an alert's ride-along
 * `herald_dismiss` list (at most 32), as HeraldKit's `Dismissal.all(in:)` reads them.
 */
export function dismissalsIn(document) {
  let push;
  try {
    push = document instanceof Uint8Array ? JSON.parse(decoder.decode(document)) : document;
  } catch (e) {
    return [];
  }
  if (typeof push !== 'object' || push === null || Array.isArray(push)) return [];
  const one = (entry) =>
    typeof entry === 'object' && entry !== null && typeof entry.conversation === 'string' && entry.conversation !== '' &&
    typeof entry.up_to === 'string' && entry.up_to !== ''
      ? { conversation: entry.conversation, upTo: entry.up_to }
      : null;
  const out = [];
  const own = one(push);
  if (own) out.push(own);
  for (const entry of (Array.isArray(push.herald_dismiss) ? push.herald_dismiss : []).slice(0, 32)) {
    const found = one(entry);
    if (found) out.push(found);
  }
  return out;
}

/**
 * Whether a shown notification's document is covered by a dismissal: the same conversation (its
 * thread id, else its Kasia sender) and a position (`herald_position`, else the Kasia DAA score)
 * at or below `upTo`; whole numbers compare as numbers, text as text, a number and text never.
 */
export function dismisses(dismissal, shown) {
  const push = typeof shown === 'object' && shown !== null ? shown : {};
  const aps = typeof push.aps === 'object' && push.aps !== null ? push.aps : {};
  const kasia = typeof push.kasia === 'object' && push.kasia !== null ? push.kasia : {};
  const conversation = aps['thread-id'] ?? kasia.sender;
  const position = push.herald_position ?? (kasia.daaScore !== undefined ? String(kasia.daaScore) : undefined);
  if (conversation !== dismissal.conversation || typeof position !== 'string') return false;
  const whole = /^[0-9]+$/;
  if (whole.test(position) && whole.test(dismissal.upTo)) return BigInt(position) <= BigInt(dismissal.upTo);
  if (whole.test(position) || whole.test(dismissal.upTo)) return false;
  return position <= dismissal.upTo;
}
