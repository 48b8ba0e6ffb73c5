"""The admin console (docs/console.md): server-rendered pages over the same application services as the
REST API, signed-in by a session cookie, under a strict Content-Security-Policy."""
