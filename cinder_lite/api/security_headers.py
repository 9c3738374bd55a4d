"""Headers every response of the API process carries: no page of
another site may frame it (the dashboard's actions are buttons a
clickjacking page could trick a user into pressing), and no browser
guesses a content type it was not told."""

FRAME_POLICY = "frame-ancestors 'none'"


class SecurityHeaders:

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        def _start_response(status, headers, exc_info=None):
            names = {name.lower() for name, _ in headers}
            if 'content-security-policy' not in names:
                headers.append(('Content-Security-Policy', FRAME_POLICY))
            if 'x-frame-options' not in names:
                headers.append(('X-Frame-Options', 'DENY'))
            if 'x-content-type-options' not in names:
                headers.append(('X-Content-Type-Options', 'nosniff'))
            return start_response(status, headers, exc_info)
        return self.app(environ, _start_response)
