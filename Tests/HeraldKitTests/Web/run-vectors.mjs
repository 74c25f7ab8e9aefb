// Runs the vectors the Swift tests made (WebModuleTests) through herald-push.js, in Node or in a
// browser page: each push's verdict (its document, or why it was refused) and each document's
// notification. Returns one line per vector that disagrees with HeraldKit; none means all agree.
export async function disagreements(vectors, { verifiedDocument, notificationFor, base64url, dismissalsIn, dismisses }) {
  const out = [];
  const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  for (const v of vectors.pushes) {
    let got;
    try {
      got = { document: hex(await verifiedDocument(base64url(v.payload), v.pinned, { now: v.now })) };
    } catch (e) {
      got = { error: e && e.reason ? e.reason : `threw ${e}` };
    }
    const want = v.document !== null ? { document: hex(base64url(v.document)) } : { error: v.error };
    if (JSON.stringify(got) !== JSON.stringify(want)) out.push(`${v.name}: got ${JSON.stringify(got)}, HeraldKit says ${JSON.stringify(want)}`);
  }
  for (const n of vectors.notifications) {
    const { title, options, badgeCount } = notificationFor(base64url(n.document));
    // Keys in the order the vectors' JSON has them (sorted).
    const got = { actions: (options.actions || []).map((a) => a.action), badge: badgeCount ?? null, body: options.body, silent: options.silent === true, tag: options.tag ?? null, title };
    if (JSON.stringify(got) !== JSON.stringify(n.expect)) out.push(`${n.name}: got ${JSON.stringify(got)}, want ${JSON.stringify(n.expect)}`);
  }
  for (const d of vectors.dismissals) {
    const got = dismissalsIn(base64url(d.document)).map((x) => ({ conversation: x.conversation, up_to: x.upTo }));
    if (JSON.stringify(got) !== JSON.stringify(d.expect)) out.push(`${d.name}: got ${JSON.stringify(got)}, HeraldKit says ${JSON.stringify(d.expect)}`);
  }
  for (const p of vectors.planner) {
    const got = dismisses({ conversation: p.conversation, upTo: p.up_to }, JSON.parse(new TextDecoder().decode(base64url(p.shown))));
    if (got !== p.expect) out.push(`${p.name}: got ${got}, HeraldKit's planner says ${p.expect}`);
  }
  return out;
}
