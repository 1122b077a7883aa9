"""OpenAPI description of API key authentication (loaded by drf-spectacular through AccountsConfig.ready)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "`Authorization: Bearer <api key>`. A service key may add "
                "`X-On-Behalf-Of: <external user id>` to act for that user."
            ),
        }
