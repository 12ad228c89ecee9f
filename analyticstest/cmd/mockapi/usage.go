package main

// usage is what -h prints before the flags: what the mock answers, the
// control API with the format of each request and answer, and how to stop
// it from a script. It is a format whose one verb is shutdownGrace.
const usage = `Usage: mockapi [-addr host:port] [-script file] [-lenient] [-public]
               [-oauth-public-key file -oauth-client-id id -oauth-key-id id
                [-oauth-audience aud] [-oauth-ttl d] [-oauth-skew d]]

Runs the mock tracking API (package analyticstest) and prints
"listening on http://host:port", then one line per event received.

POST /v1/batch is answered from the script (200 without one), after the
checks of the real API, which win whatever the script says:
  404  a path other than /v1/batch (an endpoint is the scheme and host only)
  405  a method other than POST
  401  no Authorization: Basic base64(writeKey + ":") with a non-empty key
  413  a body over 500,000 bytes after gzip decoding
  400  gzip that does not decode, a body that is not a JSON object with a
       "batch" array, or a batch item that is not an object with a "type"
Each refusal has the body {"code": "...", "message": "..."} and is recorded
with its status. A batch of more than 2,500 events answered 200 is not
refused: as the real API does, the events past the 2,500th are rejected,
their lines end in rejected="...", and "rejected" counts them in
GET /_requests. -lenient turns the checks off.

With -oauth-public-key, the source requires OAuth 2.0, as a Segment source
with OAuth enforced does, and the mock is its authorization server too:
  POST /token
      a form: grant_type=client_credentials, client_assertion_type=
      urn:ietf:params:oauth:client-assertion-type:jwt-bearer,
      client_assertion=<JWT>, scope=tracking_api:write. The JWT must be
      RS256 (typ JWT, kid the -oauth-key-id), verify with the public key,
      have iss and sub the -oauth-client-id, aud the -oauth-audience (by
      default http://<Host>), iat at most 5 s ahead of the mock's clock
      (-oauth-skew moves it, and its Date), exp after it and at most 60 s
      after iat, and a jti never used. 200 {"access_token": "...",
      "token_type": "Bearer", "expires_in": <-oauth-ttl in seconds>,
      "scope": "tracking_api:write"}; else 400, 401 or 415 with
      {"error": "...", "error_description": "..."}. The script's
      "tokenResponses" answer token requests first (a 429 with
      X-RateLimit-Reset, a 503, a drop).
  POST /v1/batch then needs Authorization: Bearer <a token it issued, not
      expired> (401 otherwise) and the write key in the body's "writeKey"
      (400 otherwise), instead of Basic credentials.

Control API (its requests are not recorded; errors have the same body).
Without -public it answers only a loopback Host (localhost, 127.0.0.0/8,
[::1], any port) or the address it listens on; a cross-site request (an
Origin neither loopback nor the mock's own, or Sec-Fetch-Site: cross-site)
is refused 403 even with -public:
  GET /_requests
      200, a JSON array of every request received, in the order recorded:
        {"at": "2024-05-06T07:08:09.123Z", "method": "POST",
         "path": "/v1/batch", "headers": {"Content-Type": ["application/json"]},
         "body": "<the body, gzip decoded>", "events": [{...}],
         "messageIds": ["m1"], "sentAt": "...", "context": {...},
         "status": 200, "rejected": 0, "error": null}
      numbers in events and context exactly as received; status 0: no
      complete answer (drop, close_before_read, partial, a delay cut
      short); rejected: how many of the last events a 2xx rejected, past
      the 2,500th (events and messageIds list them too); error: why the
      request was refused (with -lenient: why its body could not be
      decoded), else null.
  POST /_script
      body: a script, which replaces the script, rules and default:
        {"responses": [{"status": 503},
                       {"status": 429, "headers": {"Retry-After": "1"}},
                       {"action": "drop"}, {"action": "close_before_read"},
                       {"action": "partial"},
                       {"status": 200, "delayMs": 1500, "body": "{}"}],
         "rules": [{"ifEventsOver": 10, "then": {"status": 413}}],
         "default": {"status": 200},
         "tokenResponses": [{"status": 429,
                             "headers": {"X-RateLimit-Reset": "5"}}]}
      responses answer one request each, then the first matching rule,
      then the default; every key is optional. 204, or 400 saying what
      is wrong (the script in place is kept).
  POST /_reset
      forgets the record, the script, the rules and the default: 204.

SIGINT or SIGTERM stops it, after the requests in progress are answered
(at most %v). ` + "`go run`" + ` runs it as a child process that a signal to the PID
of go run does not reach; to stop it by PID from a script, build it:
  go build -o mockapi ./analyticstest/cmd/mockapi
  ./mockapi -addr 127.0.0.1:8787 & pid=$!
  ...
  kill $pid

Flags:
`
