// Subscribes this browser with the app's VAPID key and registers the subscription with Herald.
// Serve this folder and Herald from one origin (or behind your app's backend): browsers allow
// service workers only on https:// or http://localhost, and Herald sends no CORS headers.
const log = (line) => { document.getElementById('log').textContent += line + '\n'; };

function base64URLToBytes(text) {
  const padded = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - text.length % 4) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

document.getElementById('subscribe').onclick = async () => {
  const herald = document.getElementById('herald').value.replace(/\/$/, '');
  const key = document.getElementById('key').value;
  if (await Notification.requestPermission() !== 'granted') return log('notifications not allowed');
  const registration = await navigator.serviceWorker.register('sw.js');
  // GET /v1/push/vapid-public-key: the application server key (base64url of a P-256 point).
  const { public_key } = await (await fetch(herald + '/v1/push/vapid-public-key')).json();
  const subscription = await registration.pushManager.subscribe({
    userVisibleOnly: true, applicationServerKey: base64URLToBytes(public_key),
  });
  // The subscription's endpoint is this browser's identity at Herald; registering it again
  // replaces what it watches.
  const response = await fetch(herald + '/v1/push/register', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ platform: 'web', subscription: subscription.toJSON(), watched_addresses: [key] }),
  });
  log(`register: ${response.status} ${await response.text()}`);
};
