package analytics

import "time"

// Properties are the free-form properties of a Track, Page or Screen, with
// chainable setters for the common ones:
//
//	analytics.NewProperties().SetRevenue(10).SetCurrency("USD").Set("plan", "pro")
//
// Values must be something JSON can hold: strings, numbers (not NaN or
// ±Inf), booleans, nil, maps, slices, or types that encoding/json can
// marshal.
type Properties map[string]any

// NewProperties returns empty Properties.
func NewProperties() Properties { return make(Properties, 8) }

// Set sets property name to value and returns p, for chaining.
func (p Properties) Set(name string, value any) Properties {
	p[name] = value
	return p
}

// SetRevenue sets "revenue".
func (p Properties) SetRevenue(revenue float64) Properties { return p.Set("revenue", revenue) }

// SetCurrency sets "currency".
func (p Properties) SetCurrency(currency string) Properties { return p.Set("currency", currency) }

// SetValue sets "value".
func (p Properties) SetValue(value float64) Properties { return p.Set("value", value) }

// SetPath sets "path".
func (p Properties) SetPath(path string) Properties { return p.Set("path", path) }

// SetReferrer sets "referrer".
func (p Properties) SetReferrer(referrer string) Properties { return p.Set("referrer", referrer) }

// SetTitle sets "title".
func (p Properties) SetTitle(title string) Properties { return p.Set("title", title) }

// SetURL sets "url".
func (p Properties) SetURL(url string) Properties { return p.Set("url", url) }

// SetName sets "name".
func (p Properties) SetName(name string) Properties { return p.Set("name", name) }

// SetCategory sets "category".
func (p Properties) SetCategory(category string) Properties { return p.Set("category", category) }

// SetSKU sets "sku".
func (p Properties) SetSKU(sku string) Properties { return p.Set("sku", sku) }

// SetPrice sets "price".
func (p Properties) SetPrice(price float64) Properties { return p.Set("price", price) }

// SetProductId sets "id" (the product's).
func (p Properties) SetProductId(id string) Properties { return p.Set("id", id) }

// SetOrderId sets "orderId", the key segmentio/analytics-go v3 writes.
func (p Properties) SetOrderId(id string) Properties { return p.Set("orderId", id) }

// SetTotal sets "total".
func (p Properties) SetTotal(total float64) Properties { return p.Set("total", total) }

// SetSubtotal sets "subtotal".
func (p Properties) SetSubtotal(subtotal float64) Properties { return p.Set("subtotal", subtotal) }

// SetShipping sets "shipping".
func (p Properties) SetShipping(shipping float64) Properties { return p.Set("shipping", shipping) }

// SetTax sets "tax".
func (p Properties) SetTax(tax float64) Properties { return p.Set("tax", tax) }

// SetDiscount sets "discount".
func (p Properties) SetDiscount(discount float64) Properties { return p.Set("discount", discount) }

// SetCoupon sets "coupon".
func (p Properties) SetCoupon(coupon string) Properties { return p.Set("coupon", coupon) }

// SetProducts sets "products".
func (p Properties) SetProducts(products ...Product) Properties {
	return p.Set("products", products)
}

// SetRepeat sets "repeat".
func (p Properties) SetRepeat(repeat bool) Properties { return p.Set("repeat", repeat) }

// Product is one product of the e-commerce spec, for SetProducts.
type Product struct {
	ID    string  `json:"id,omitempty"`   // product id
	SKU   string  `json:"sku,omitempty"`  // stock keeping unit
	Name  string  `json:"name,omitempty"` // product name
	Price float64 `json:"price"`          // unit price
}

// Traits are the free-form traits of an Identify or Group, with chainable
// setters for the common ones. Values follow the rules of Properties.
type Traits map[string]any

// NewTraits returns empty Traits.
func NewTraits() Traits { return make(Traits, 8) }

// Set sets trait name to value and returns t, for chaining.
func (t Traits) Set(name string, value any) Traits {
	t[name] = value
	return t
}

// SetAddress sets "address".
func (t Traits) SetAddress(address string) Traits { return t.Set("address", address) }

// SetAge sets "age".
func (t Traits) SetAge(age int) Traits { return t.Set("age", age) }

// SetAvatar sets "avatar".
func (t Traits) SetAvatar(url string) Traits { return t.Set("avatar", url) }

// SetBirthday sets "birthday".
func (t Traits) SetBirthday(date time.Time) Traits { return t.Set("birthday", date) }

// SetCreatedAt sets "createdAt".
func (t Traits) SetCreatedAt(date time.Time) Traits { return t.Set("createdAt", date) }

// SetDescription sets "description".
func (t Traits) SetDescription(desc string) Traits { return t.Set("description", desc) }

// SetEmail sets "email".
func (t Traits) SetEmail(email string) Traits { return t.Set("email", email) }

// SetFirstName sets "firstName".
func (t Traits) SetFirstName(firstName string) Traits { return t.Set("firstName", firstName) }

// SetGender sets "gender".
func (t Traits) SetGender(gender string) Traits { return t.Set("gender", gender) }

// SetLastName sets "lastName".
func (t Traits) SetLastName(lastName string) Traits { return t.Set("lastName", lastName) }

// SetName sets "name".
func (t Traits) SetName(name string) Traits { return t.Set("name", name) }

// SetPhone sets "phone".
func (t Traits) SetPhone(phone string) Traits { return t.Set("phone", phone) }

// SetTitle sets "title".
func (t Traits) SetTitle(title string) Traits { return t.Set("title", title) }

// SetUsername sets "username".
func (t Traits) SetUsername(username string) Traits { return t.Set("username", username) }

// SetWebsite sets "website".
func (t Traits) SetWebsite(url string) Traits { return t.Set("website", url) }

// Integrations selects which destinations receive a message: a map of
// destination name to true, false or an options object; "All" is the
// default for those not named.
//
//	analytics.NewIntegrations().DisableAll().Enable("Mixpanel")
type Integrations map[string]any

// NewIntegrations returns empty Integrations.
func NewIntegrations() Integrations { return make(Integrations, 8) }

// EnableAll sets "All" to true: the Segment spec's key, where v3 wrote
// "all".
func (i Integrations) EnableAll() Integrations { return i.Enable("All") }

// DisableAll sets "All" to false.
func (i Integrations) DisableAll() Integrations { return i.Disable("All") }

// Enable sends the message to the destination name.
func (i Integrations) Enable(name string) Integrations { return i.Set(name, true) }

// Disable keeps the message from the destination name.
func (i Integrations) Disable(name string) Integrations { return i.Set(name, false) }

// Set sets destination name to value (true, false, or an options object).
func (i Integrations) Set(name string, value any) Integrations {
	i[name] = value
	return i
}
