// The service worker (a module: `register('sw.js', { type: 'module' })`). A push's data is the
// JSON document Herald signed, its signature attached (the browser has already decrypted it,
// RFC 8291). HeraldKit's web module checks the signature against the app's key, pinned at the
// first registration, and builds the notification: a push that fails shows the generic text.
import { verifiedDocument, notificationFor, dismissalsIn, dismisses } from './herald-push.js';

const PIN = '/herald/pinned-signing-key';

self.addEventListener('push', (event) => {
  // PushMessageData's arrayBuffer() answers at once (it is not a Response's promise).
  event.waitUntil(show(event.data ? new Uint8Array(event.data.arrayBuffer()) : new Uint8Array()));
});

self.addEventListener('message', (event) => {
  const { simulatedPush, signingKey } = event.data || {};
  // The page's registration answer names the app's key: kept on first use, never replaced.
  if (signingKey) event.waitUntil(pin(signingKey));
  // The page's simulator mode hands over what Herald pushed to the simulator, as the browser's
  // push service would hand over a push.
  if (simulatedPush !== undefined) event.waitUntil(show(new TextEncoder().encode(simulatedPush)));
});

async function pin(key) {
  const cache = await caches.open('herald');
  const pinned = await cache.match(PIN);
  if (!pinned) return cache.put(PIN, new Response(key));
  if ((await pinned.text()) !== key) return tell({ failed: 'the app\'s signing key changed; pushes signed with the new one are refused' });
}

async function show(bytes) {
  const pinned = await (await caches.open('herald')).match(PIN);
  let document = null;
  try {
    if (!pinned) throw new Error('no signing key pinned yet');
    document = await verifiedDocument(bytes, await pinned.text());
  } catch (error) {
    await tell({ refused: error.reason || error.message });
  }
  // Read on another device: close this conversation's notifications up to the position. A
  // `dismiss` push (no alert) shows nothing else.
  const dismissals = document ? dismissalsIn(document) : [];
  if (dismissals.length > 0) {
    const open = await self.registration.getNotifications();
    const closing = open.filter((shown) => dismissals.some((dismissal) => dismisses(dismissal, shown.data)));
    closing.forEach((shown) => shown.close());
    await tell({ dismissed: closing.map((shown) => shown.title) });
    if (!hasAlert(document)) return;
  }
  // Kasia: the message itself is end-to-end encrypted (`kasia.payload`, or null when it did not
  // fit and must be fetched by `kasia.txId`); a real app decrypts it here with the user's key.
  const { title, options, badgeCount } = notificationFor(document || {});
  try {
    await self.registration.showNotification(title, options);
    if (badgeCount !== undefined && self.navigator.setAppBadge) await self.navigator.setAppBadge(badgeCount);
    await tell({ shown: { title, body: options.body } });
  } catch (error) {
    await tell({ failed: `${error && error.message ? error.message : error}` });
  }
}

function hasAlert(document) {
  try {
    const push = JSON.parse(new TextDecoder().decode(document));
    return !!(push && push.aps && push.aps.alert);
  } catch (e) {
    return false;
  }
}

// Tells the open pages what it showed, or why it could not: they log it.
function tell(message) {
  return self.clients.matchAll({ type: 'window', includeUncontrolled: true })
    .then((pages) => pages.forEach((page) => page.postMessage(message)));
}

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  event.waitUntil(clients.openWindow('/'));
});
