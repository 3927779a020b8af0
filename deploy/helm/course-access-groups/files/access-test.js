// `helm test`: asks the release's API for an access decision, as the LMS does, from a pod of the
// service's own image (Node.js 20: fetch and crypto, nothing else). API_URL names the API
// Service; with JWT_SECRET (HS256) it signs a service token, as the LMS's client would.
const crypto = require('node:crypto');

const base = process.env.API_URL;
const b64 = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');

function serviceToken(secret) {
  const claims = { user_id: 1, roles: ['service'], exp: Math.floor(Date.now() / 1000) + 60 };
  if (process.env.JWT_ISSUER) claims.iss = process.env.JWT_ISSUER;
  if (process.env.JWT_AUDIENCE) claims.aud = process.env.JWT_AUDIENCE;
  const unsigned = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`;
  return `${unsigned}.${crypto.createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
}

async function call(path, init = {}) {
  const res = await fetch(base + path, { ...init, signal: AbortSignal.timeout(5000) });
  return { status: res.status, body: await res.json().catch(() => null) };
}

function check(what, ok, got) {
  if (!ok) {
    console.error(`FAIL ${what}: ${JSON.stringify(got)}`);
    process.exit(1);
  }
  console.log(`ok ${what}`);
}

async function main() {
  const ready = await call('/readyz');
  check('the API is ready', ready.status === 200, ready);
  const decision = {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ action: 'course.enroll', user_id: 1, course_ids: ['course-v1:helm+test+run'] }),
  };
  const path = '/course_access_groups/api/v1/access/batch';
  const anonymous = await call(path, decision);
  check('an access decision without a token is refused', anonymous.status === 401 && typeof anonymous.body?.detail === 'string', anonymous);
  if (!process.env.JWT_SECRET) {
    console.log("no JWT_SECRET (a public key, a JWKS or the LMS's own keys verify tokens): no token can be signed here, the refusal alone is checked");
    return;
  }
  const token = serviceToken(process.env.JWT_SECRET);
  const answered = await call(path, { ...decision, headers: { ...decision.headers, authorization: `Bearer ${token}` } });
  const result = answered.body?.results?.[0];
  check(
    'an access decision for a course the release does not know',
    answered.status === 200 && result?.allowed === false && result.reason === 'unknown_course',
    answered,
  );
}

main().catch((err) => {
  console.error(`FAIL ${err.message}`);
  process.exit(1);
});
