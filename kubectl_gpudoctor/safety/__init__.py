"""What keeps output safe: untrusted text made inert, secret values kept out."""
