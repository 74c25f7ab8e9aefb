// Subscribes this browser with the app's VAPID key and registers the subscription with Herald.
// Browsers allow service workers only on https:// or http://localhost; a page on another origin
// than Herald needs that origin in Herald's HERALD_CORS_ORIGINS.
const log = (line) => { document.getElementById('log').textContent += line + '\n'; };

function base64URLToBytes(text) {
  const padded = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - text.length % 4) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

// Runs one step; on failure the page says which step failed and why, then stops.
async function step(name, work) {
  try {
    return await work();
  } catch (error) {
    log(`${name} failed: ${error && error.message ? error.message : error}`);
    throw error;
  }
}

// A browser's push service may never answer (out of reach, blocked by a firewall): the page
// says so instead of waiting for ever.
function within(seconds, promise) {
  const silence = new Promise((_, reject) => setTimeout(
    () => reject(new Error(`no answer after ${seconds} s; is the browser's push service reachable from here?`)), seconds * 1000));
  return Promise.race([promise, silence]);
}

async function subscribeAndRegister() {
  const herald = document.getElementById('herald').value.replace(/\/$/, '');
  const key = document.getElementById('key').value;
  const permission = await step('notification permission', () => Notification.requestPermission());
  if (permission !== 'granted') return log(`notification permission: ${permission}; allow notifications for this page`);
  const registration = await step('service worker', () => navigator.serviceWorker.register('sw.js', { type: 'module' }));
  await step('service worker', () => navigator.serviceWorker.ready);
  const public_key = await vapidKey(herald);
  const subscription = await step('push subscription (the browser\'s push service)', () =>
    within(20, registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: base64URLToBytes(public_key) })));
  log('subscribed: ' + new URL(subscription.endpoint).origin);
  await register(herald, subscription.toJSON(), key);
}

// GET /v1/push/vapid-public-key: the application server key (base64url of a P-256 point). A
// TypeError ("Failed to fetch") is the browser refusing the answer: Herald unreachable, or this
// page's origin not in HERALD_CORS_ORIGINS (Herald's log then names the origin it kept out).
async function vapidKey(herald) {
  const { public_key } = await step('VAPID key from Herald', async () => {
    let response;
    try {
      response = await fetch(herald + '/v1/push/vapid-public-key');
    } catch (error) {
      throw new Error(`${error.message}: is Herald running at ${herald}, with this page's origin ${location.origin} in HERALD_CORS_ORIGINS?`);
    }
    if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
    return response.json();
  });
  log('VAPID key: ' + public_key.slice(0, 16) + '…');
  return public_key;
}

// Simulator mode, for trying the page with Herald on its embedded defaults: the built-in Web
// Push simulator (on Herald's admin listener) hands out the subscription instead of the
// browser's push service, and the page reads back what Herald pushed to it (decrypted by the
// simulator) and gives it to the service worker, which shows it as it would a real push.
async function simulate() {
  const herald = document.getElementById('herald').value.replace(/\/$/, '');
  const simulator = document.getElementById('simulator').value.replace(/\/$/, '');
  const key = document.getElementById('key').value;
  const permission = await step('notification permission', () => Notification.requestPermission());
  if (permission !== 'granted') return log(`notification permission: ${permission}; allow notifications for this page`);
  await step('service worker', () => navigator.serviceWorker.register('sw.js', { type: 'module' }));
  const registration = await step('service worker', () => navigator.serviceWorker.ready);
  const public_key = await vapidKey(herald);
  const subscription = await step('subscription from the simulator', async () => {
    let response;
    try {
      response = await fetch(simulator + '/subscribe', {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ application_server_key: public_key }),
      });
    } catch (error) {
      throw new Error(`${error.message}: is Herald's admin listener at ${simulator}, with this page's origin ${location.origin} in HERALD_CORS_ORIGINS?`);
    }
    if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
    return response.json();
  });
  log('subscribed at the simulator: ' + new URL(subscription.endpoint).origin);
  await register(herald, subscription, key);
  log('waiting for pushes: publish to ' + key);
  const seen = new Set();
  const endpoint = encodeURIComponent(subscription.endpoint);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    let records = [];
    try {
      records = (await (await fetch(`${simulator}/notifications?endpoint=${endpoint}`)).json()).notifications || [];
    } catch (error) {
      log(`reading the simulator failed: ${error.message}`);
      continue;
    }
    for (const record of records) {
      const id = JSON.stringify(record);
      if (seen.has(id)) continue;
      seen.add(id);
      registration.active.postMessage({ simulatedPush: record.plaintext });
    }
  }
}

// The fields from the page's address (?herald=…&simulator=…&key=…), for other ports.
for (const [name, value] of new URLSearchParams(location.search)) {
  const field = document.getElementById(name);
  if (field && ['herald', 'simulator', 'key'].includes(name)) field.value = value;
}

// POST /v1/push/register with a subscription: its endpoint is this browser's identity at
// Herald, and registering it again replaces what it watches.
async function register(herald, subscription, key) {
  const response = await step('registration with Herald', () => fetch(herald + '/v1/push/register', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ platform: 'web', subscription, watched_addresses: [key] }),
  }));
  const text = await response.text();
  log(`register: ${response.status} ${text}`);
  if (!response.ok) throw new Error(text);
  // The app's signing key: the service worker pins it and checks every push against it.
  const { signing_key } = JSON.parse(text);
  if (signing_key) (await navigator.serviceWorker.ready).active.postMessage({ signingKey: signing_key });
}

// The service worker says what it showed.
navigator.serviceWorker.onmessage = (event) => {
  const { shown, failed, refused, dismissed } = event.data || {};
  if (dismissed) log(`notifications closed (read on another device): ${dismissed.length}`);
  if (refused) log(`push refused (${refused}): shown as the generic text`);
  if (shown) log(`notification shown: ${shown.title}: ${shown.body}`);
  if (failed) log(`notification failed: ${failed}`);
};

document.getElementById('subscribe').onclick = () => subscribeAndRegister().catch(() => {});
document.getElementById('simulate').onclick = () => simulate().catch(() => {});
