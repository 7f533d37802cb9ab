"""URLs: normalization, filters, registered domains, trap patterns and seed lines."""
