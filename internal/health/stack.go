package health

// Stack is filled in by the caller with the stack's clients.
type Stack struct{}
