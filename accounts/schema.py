"""OpenAPI description of API key authentication (loaded by drf-spectacular through AccountsConfig.ready)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "llk_<prefix>_<secret>",
            "description": (
                "`Authorization: Bearer <api key>` (in the docs' Authorize dialog, paste the key alone). A user "
                "key acts as its owner. A service key acts as itself, or for a user named by "
                "`X-On-Behalf-Of: <external user id>`, with that user's rights."
            ),
        }
