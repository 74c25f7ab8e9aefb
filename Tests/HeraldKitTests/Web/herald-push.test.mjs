// Node's own test runner on herald-push.js: `HERALD_WEB_VECTORS=vectors.json node --test herald-push.test.mjs`
// (WebModuleTests writes the vectors and runs this).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as heraldPush from '../../../HeraldKit/Web/herald-push.js';
import { disagreements } from './run-vectors.mjs';

const vectors = JSON.parse(readFileSync(process.env.HERALD_WEB_VECTORS, 'utf8'));

test('herald-push.js agrees with HeraldKit on every vector', async () => {
  assert.ok(vectors.pushes.length > 0 && vectors.notifications.length > 0);
  assert.deepEqual(await disagreements(vectors, heraldPush), []);
});

test('a signature with another key is refused whatever the document', async () => {
  const valid = vectors.pushes.find((v) => v.document !== null);
  const otherKey = vectors.pushes.find((v) => v.name === 'another key').pinned;
  await assert.rejects(heraldPush.verifiedDocument(heraldPush.base64url(valid.payload), otherKey, { now: valid.now }), { reason: 'badSignature' });
});
