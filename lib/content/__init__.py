"""What a page holds: HTML parsing (text, links, metadata), encodings, sitemaps, and the
fingerprints of content (SHA-256, SimHash)."""
