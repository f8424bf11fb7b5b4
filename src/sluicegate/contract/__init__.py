"""What the user wrote: the contract models, its vocabulary (types, formats, tokens), the loader."""
