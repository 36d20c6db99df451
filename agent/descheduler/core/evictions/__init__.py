"""The cycle's evictions as the API server and the policy's limits would allow them."""
