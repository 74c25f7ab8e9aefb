// The service worker: a push's data is the same JSON document an APNs push carries (the browser
// has already decrypted it, RFC 8291), so the page shows what an iOS extension would.
self.addEventListener('push', (event) => {
  let push = {};
  try { push = event.data ? event.data.json() : {}; } catch (e) { /* not JSON: show the generic text */ }
  event.waitUntil(show(push));
});

// The page's simulator mode hands over what Herald pushed to the simulator, as the browser's
// push service would hand over a push.
self.addEventListener('message', (event) => {
  const { simulatedPush } = event.data || {};
  if (simulatedPush === undefined) return;
  let push = {};
  try { push = JSON.parse(simulatedPush); } catch (e) { /* not JSON: show the generic text */ }
  event.waitUntil(show(push));
});

function show(push) {
  const alert = (push.aps && push.aps.alert) || {};
  const title = typeof alert === 'string' ? 'Herald' : (alert.title || 'New message');
  const body = typeof alert === 'string' ? alert : (alert.body || '');
  // Kasia: the message itself is end-to-end encrypted (`kasia.payload`, or null when it did not
  // fit and must be fetched by `kasia.txId`); a real app decrypts it here with the user's key.
  const tag = (push.kasia && push.kasia.txId) || undefined;
  // Then tells the open pages what it showed, or why it could not: they log it.
  const tell = (message) => self.clients.matchAll({ type: 'window', includeUncontrolled: true })
    .then((pages) => pages.forEach((page) => page.postMessage(message)));
  return self.registration.showNotification(title, { body, tag, data: push })
    .then(() => tell({ shown: { title, body } }), (error) => tell({ failed: `${error && error.message ? error.message : error}` }));
}

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  event.waitUntil(clients.openWindow('/'));
});
